"""Scenario files under scenarios/papers/ run as the experiments need them: sweeps by value and profile."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from sova.control.profiles import check_profile
from sova.experiments.scenario_runs import run_scenario, run_sweep
from sova.model.sweep import load_runs, load_scenario

PAPERS = Path("scenarios") / "papers"


def sweep(root: Path, path: str, profiles: list[str] | None = None) -> dict:
    """{swept value: {profile: summary}} of one scenario file."""
    spec, runs = load_runs(root / PAPERS / path, check_profile)
    values = [tuple(v) if isinstance(v, list) else v for v in spec.values]  # a list of sizes is a key too
    return {run.value: {r.profile: r.summary for r in run.results} for run in run_sweep(runs, values, profiles)}


def by_profile(root: Path, path: str, profiles: list[str] | None = None, minutes: float | None = None) -> dict:
    """{profile: summary} of one scenario file (`minutes`: cut to that long)."""
    scenario = load_scenario(root / PAPERS / path, check_profile)
    if minutes is not None:
        scenario = replace(scenario, duration=60.0 * minutes)
    return {r.profile: r.summary for r in run_scenario(scenario, profiles)}


def mean_error(pairs: list[tuple[float, float]]) -> float:
    """Mean relative error in per cent of (measured, predicted) pairs."""
    return float(100 * np.mean([abs(predicted - measured) / measured for measured, predicted in pairs]))
