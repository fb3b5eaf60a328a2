"""Write a run's results into a directory: summary.json, metrics.parquet (and metrics CSVs), audit logs,
plots, report.html.

The directory is a staging directory that ``sova.report.result_dir`` moves into place once it is full,
so an interrupted or failed run never leaves a half-written result directory. summary.json is strict
JSON: a number that is not finite is written as null, and the reason goes under "undefined".
"""

from __future__ import annotations

import csv
from dataclasses import asdict
from pathlib import Path

import numpy as np

from sova import __version__
from sova.experiments.scenario_runs import ProfileResult
from sova.model.scenario import Scenario
from sova.report.html import render_report
from sova.report.metrics_table import FILE, run_table, write_table
from sova.report.plots import make_plots
from sova.report.summary_file import scenario_header, write_summary
from sova.report.sweep_report import write_sweep


def write_results(scenario: Scenario, results: list[ProfileResult], d: Path) -> None:
    """One scenario's results, into the (staging) directory d."""
    _write_all(scenario, results, d)


def write_sweep_results(sweep, scenarios, runs, d: Path) -> None:
    """A sweep's results, into the (staging) directory d."""
    write_sweep(sweep, scenarios, runs, d, scenarios[0].outputs.plots)


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
    write_table(run_table(scenario, results), d / FILE)
    for r in results:
        if scenario.outputs.csv:
            _write_csv(d / f"metrics-{r.profile}.csv", r.series)
        if r.audit.entries:  # a profile whose executor saw no action has no audit file, not an empty one
            r.audit.write_jsonl(d / f"audit-{r.profile}.jsonl")
        if r.slo_intervals:
            _write_rows(d / f"slo-{r.profile}.csv", r.slo_intervals)
    plots = make_plots(results, d) if scenario.outputs.plots else []
    (d / "report.html").write_text(render_report(doc, results, plots, scenario), encoding="utf-8")


def _write_rows(path: Path, rows: list[dict]) -> None:
    """Rows of the same keys as a CSV file, a missing value as an empty cell."""
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows({k: ("" if v is None else v) for k, v in row.items()} for row in rows)


def _write_csv(path: Path, series: dict[str, np.ndarray]) -> None:
    keys = list(series)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(keys)
        for row in zip(*(series[k] for k in keys), strict=True):
            w.writerow([f"{v:.6g}" if isinstance(v, float | np.floating) else v for v in row])
