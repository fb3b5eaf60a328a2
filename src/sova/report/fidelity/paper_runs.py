"""Scenario files under scenarios/papers/ run as the experiments need them (sweeps by value and profile), each
file's wall and CPU seconds kept for the run-time table."""

from __future__ import annotations

import contextlib
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from sova.control.profiles import check_profile
from sova.experiments.scenario_runs import run_scenario, run_sweep
from sova.model.sweep import load_runs, load_scenario

PAPERS = Path("scenarios") / "papers"
_times: dict[str, list[float]] = {}  # scenario file under PAPERS: [wall s, CPU s, runs] since take_times()


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the pools that run trials and sweeps)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@contextlib.contextmanager
def timed(path: str) -> Iterator[None]:
    """Add the block's wall and CPU seconds, and one run, to the scenario file's."""
    wall, cpu = time.monotonic(), cpu_seconds()
    yield
    spent = _times.setdefault(path, [0.0, 0.0, 0])
    spent[0] += time.monotonic() - wall
    spent[1] += cpu_seconds() - cpu
    spent[2] += 1


def take_times() -> dict[str, list[float]]:
    """The files' times since the last call, which starts them again."""
    taken = dict(_times)
    _times.clear()
    return taken


def sweep(root: Path, path: str, profiles: list[str] | None = None) -> dict:
    """{swept value: {profile: summary}} of one scenario file."""
    spec, runs = load_runs(root / PAPERS / path, check_profile)
    values = [tuple(v) if isinstance(v, list) else v for v in spec.values]  # a list of sizes is a key too
    with timed(path):
        done = run_sweep(runs, values, profiles)
    return {run.value: {r.profile: r.summary for r in run.results} for run in done}


def by_profile(root: Path, path: str, profiles: list[str] | None = None) -> dict:
    """{profile: summary} of one scenario file."""
    scenario = load_scenario(root / PAPERS / path, check_profile)
    with timed(path):
        results = run_scenario(scenario, profiles)
    return {r.profile: r.summary for r in results}


def mean_error(pairs: list[tuple[float, float]]) -> float:
    """Mean relative error in per cent of (measured, predicted) pairs."""
    return float(100 * np.mean([abs(predicted - measured) / measured for measured, predicted in pairs]))
