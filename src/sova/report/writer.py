"""Write a run's results to a directory, all or nothing.

Everything is written into a fresh temporary directory beside the target and moved into place at
the end, so an interrupted or failed run never leaves a half-written result directory.
"""

from __future__ import annotations

import csv
import json
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

import numpy as np

from sova import __version__
from sova.control.experiment import ProfileResult
from sova.model.scenario import Scenario
from sova.report.html import render_report
from sova.report.plots import make_plots


class OutputError(Exception):
    """The output directory cannot be written as asked."""


def write_results(scenario: Scenario, results: list[ProfileResult], out: Path, force: bool = False) -> Path:
    """One scenario's results, written all at once."""
    return write_atomically(out, force, lambda d: _write_all(scenario, results, d))


def write_sweep_results(sweep, scenarios, runs, out: Path, force: bool = False) -> Path:
    """A sweep's results, written all at once."""
    from sova.report.sweep import write_sweep

    return write_atomically(out, force, lambda d: write_sweep(sweep, scenarios, runs, d, scenarios[0].outputs.plots))


def write_atomically(out: Path, force: bool, fill) -> Path:
    """Fill a fresh directory beside `out` and move it into place; nothing half-written is ever left."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out} exists and is not a directory")
    if out.exists() and any(out.iterdir()) and not force:
        raise OutputError(f"{out} already holds results; pass --force to replace them, or choose another --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        fill(tmp)
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            out.rename(old / "x")
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def scenario_header(scenario: Scenario) -> dict:
    """What every summary.json says of its scenario (the file, without the value a sweep appends)."""
    return {
        "name": scenario.name,
        "description": scenario.description,
        "source": scenario.source.split(" [")[0],
        "duration": scenario.duration,
        "step": scenario.step,
        "seed": scenario.seed,
    }


def write_summary(d: Path, doc: dict) -> None:
    (d / "summary.json").write_text(json.dumps(doc, indent=2, default=json_default) + "\n", encoding="utf-8")


def summary_document(scenario: Scenario, results: list[ProfileResult]) -> dict:
    return {
        "sova_version": __version__,
        "scenario": {**scenario_header(scenario), "hosts": len(scenario.hosts), "vms": len(scenario.vms)},
        "profiles": {r.profile: r.summary for r in results},
        "services": {r.profile: r.services for r in results},
        "migrations": {r.profile: [asdict(m) for m in r.migrations] for r in results},
    }


def _write_all(scenario: Scenario, results: list[ProfileResult], d: Path) -> None:
    doc = summary_document(scenario, results)
    write_summary(d, doc)
    for r in results:
        _write_csv(d / f"metrics-{r.profile}.csv", r.series)
        r.audit.write_jsonl(d / f"audit-{r.profile}.jsonl")
    plots = make_plots(results, d) if scenario.outputs.plots else []
    (d / "report.html").write_text(render_report(doc, results, plots), encoding="utf-8")


def _write_csv(path: Path, series: dict[str, np.ndarray]) -> None:
    keys = list(series)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(keys)
        for row in zip(*(series[k] for k in keys), strict=True):
            w.writerow([f"{v:.6g}" if isinstance(v, float | np.floating) else v for v in row])


def json_default(o):
    """numpy scalars and arrays as JSON numbers and lists."""
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
