"""Write a run's results into a directory: summary.json, metrics CSVs, audit logs, plots, report.html.

The directory is a staging directory that ``sova.report.result_dir`` moves into place once it is full,
so an interrupted or failed run never leaves a half-written result directory. summary.json is strict
JSON: a number that is not finite is written as null, and the reason goes under "undefined".
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict
from pathlib import Path

import numpy as np

from sova import __version__
from sova.control.experiment import ProfileResult
from sova.model.scenario import Scenario
from sova.report.html import render_report
from sova.report.metrics import NOT_FINITE
from sova.report.plots import make_plots


def write_results(scenario: Scenario, results: list[ProfileResult], d: Path) -> None:
    """One scenario's results, into the (staging) directory d."""
    _write_all(scenario, results, d)


def write_sweep_results(sweep, scenarios, runs, d: Path) -> None:
    """A sweep's results, into the (staging) directory d."""
    from sova.report.sweep import write_sweep

    write_sweep(sweep, scenarios, runs, d, scenarios[0].outputs.plots)


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
    """summary.json as strict JSON (never NaN or Infinity, which JSON.parse rejects)."""
    text = json.dumps(finite(doc), indent=2, default=json_default, allow_nan=False)
    (d / "summary.json").write_text(text + "\n", encoding="utf-8")


def finite(doc, undefined: dict | None = None, path: str = ""):
    """A copy of doc with every non-finite number as None, and the path of each in an "undefined" table
    with a generic reason unless one is given there: the table of the nearest dict that has one (or is a
    profile's summary), else the document's own at the top."""
    if isinstance(doc, np.ndarray):
        doc = doc.tolist()
    if isinstance(doc, dict):
        top = undefined is None and path == ""
        own = dict(doc.get("undefined", {})) if top or "profile" in doc or "undefined" in doc else None
        where, prefix = (own, "") if own is not None else (undefined, path)
        out = {k: finite(v, where, f"{prefix}{k}.") for k, v in doc.items() if k != "undefined"}
        if own:
            out["undefined"] = own
        return out
    if isinstance(doc, list | tuple):
        return [finite(v, undefined, path) for v in doc]
    if isinstance(doc, float | np.floating) and not math.isfinite(doc):
        if undefined is not None:
            undefined.setdefault(path.rstrip("."), NOT_FINITE)
        return None
    return doc


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
    (d / "report.html").write_text(render_report(doc, results, plots, scenario), encoding="utf-8")


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
