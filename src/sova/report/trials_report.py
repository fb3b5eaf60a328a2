"""Results of trials (Virtue's method): summary.json, trials.parquet (one row per run; trials.csv too with
[outputs] csv = true), the paper's kinds of plots, report.html.

Per outcome (web requests/s, higher is better; MapReduce completion time, lower is better):
- a box plot per profile of the outcome normalized to Random's median, with each median's change printed
  above its box (the paper's Fig. 4a, 5a, 7a, 7d);
- the CDF of each placement's performance relative to the Random placement it was measured on: for web
  requests/s after/before, for MapReduce time before/after (Fig. 4c, 5b, 7b, 7e);
- per tenant, the median relative performance per profile (Fig. 7c); with iterations, the CDF per
  iteration (Fig. 6); the optimizers' runtimes (Fig. 7f) and Model's gaps (Fig. 4b).
A sweep with trials gives one table of median relative improvement per value and profile (Table III).
"""

from __future__ import annotations

import csv
import html
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa

from sova import __version__
from sova.experiments.trials import RANDOM, TrialRun
from sova.model.scenario import Scenario
from sova.report.metrics_table import label_columns, write_table
from sova.report.plot_style import figure, figure_legend, save, set_value_axis
from sova.report.summary_file import scenario_header, write_summary

# (key, label, unit, higher is better)
OUTCOMES = [("web", "web throughput", "req/s", True), ("job", "MapReduce job completion time", "s", False)]


def value(run: TrialRun, key: str) -> float | None:
    return run.outcome.web_rps if key == "web" else run.outcome.job_time


def relative(run: TrialRun, before: TrialRun, key: str, higher: bool) -> float:
    """Performance relative to the trial's Random placement (>1: better)."""
    run_value, random_value = value(run, key), value(before, key)
    if run_value is None or random_value is None or run_value <= 0 or random_value <= 0:
        return float("nan")
    return run_value / random_value if higher else random_value / run_value


def tenant_relative(runs: list[TrialRun], base: dict[int, TrialRun]) -> dict[str, np.ndarray]:
    """Per web tenant: each run's throughput relative to its trial's Random placement."""
    tenants = runs[0].outcome.web_by_tenant if runs else {}
    return {
        tenant: np.array(
            [
                run.outcome.web_by_tenant[tenant] / max(base[run.trial].outcome.web_by_tenant[tenant], 1e-300)
                for run in runs
            ]
        )
        for tenant in tenants
    }


def outcomes_present(runs: list[TrialRun]) -> list[tuple[str, str, str, bool]]:
    return [outcome for outcome in OUTCOMES if any(value(run, outcome[0]) is not None for run in runs)]


def profile_stats(runs: list[TrialRun], profiles: list[str]) -> dict[str, dict]:
    """Per profile (its last iteration): medians of each outcome, of relative performance, and more."""
    base = {run.trial: run for run in runs if run.iteration == 0}
    out = {}
    for profile in profiles:
        mine = _final(runs, profile)
        st: dict = {
            "runs": len(mine),
            "objective_median": float(np.median([run.objective for run in mine])),
            "seconds_median": float(np.median([run.seconds for run in mine])),
            "seconds_max": float(np.max([run.seconds for run in mine])),
            "moves_median": float(np.median([run.moves for run in mine])),
        }
        gaps = [run.gap for run in mine if run.gap is not None]
        if gaps:
            st["gap_median"] = float(np.median(gaps))
            st["gap_within_10pct"] = float(np.mean(np.array(gaps) <= 0.1 + 1e-9))
        for key, _, _, higher in outcomes_present(runs):
            vals = np.array([np.nan if value(run, key) is None else value(run, key) for run in mine], dtype=float)
            rel = np.array([relative(run, base[run.trial], key, higher) for run in mine])
            ref = _median(
                [np.nan if value(random_run, key) is None else value(random_run, key) for random_run in base.values()]
            )
            med = _median(vals)
            st[key] = {
                "median": med,
                "median_vs_random_median": med / ref if higher else ref / med,
                "relative_median": _median(rel),
                "improved": float(np.mean(rel > 1.001)),
                "harmed": float(np.mean(rel < 0.999)),
                "unfinished": int(np.isnan(vals).sum()),
            }
        by_tenant = tenant_relative(mine, base)
        if len(by_tenant) > 1:
            st["web_tenants"] = {
                "pairs_improved": float(np.mean(np.concatenate(list(by_tenant.values())) > 1.001)),
                "by_tenant": {
                    tenant: {"relative_median": float(np.median(ratios)), "improved": float(np.mean(ratios > 1.001))}
                    for tenant, ratios in by_tenant.items()
                },
            }
        out[profile] = st
    return out


def _median(values) -> np.float64:
    """The median of the values that are not NaN (runs whose job never finished); NaN if there are none."""
    numbers = np.asarray(values, dtype=float)
    numbers = numbers[~np.isnan(numbers)]
    return np.median(numbers) if len(numbers) else np.float64(np.nan)


def trials_document(scenario: Scenario, groups: list[tuple[object, list[TrialRun]]], profiles, sweep=None) -> dict:
    return {
        "sova_version": __version__,
        "scenario": {**scenario_header(scenario), "trials": asdict(scenario.trials)},
        "sweep": None
        if sweep is None
        else [
            {"table": swept.table, "key": swept.key, "values": list(swept.values)} for swept in (sweep, *sweep.lockstep)
        ],
        "profiles": profiles,
        "values": [
            {"value": swept_value, "stats": profile_stats(runs, profiles), "runs": [asdict(run) for run in runs]}
            for swept_value, runs in groups
        ],
    }


def write_trials(doc: dict, groups, d: Path, scenario: Scenario, sweep=None) -> None:
    """summary.json (`doc`, from trials_document), trials.parquet (and trials.csv with [outputs] csv =
    true), the plots and report.html."""
    profiles, plots = doc["profiles"], scenario.outputs.plots
    write_summary(d, doc)
    rows = _trial_rows(groups)
    _write_parquet(d / TRIALS_FILE, rows, scenario, sweep)
    if scenario.outputs.csv:
        _write_csv(d / "trials.csv", rows)
    figures: list[tuple[str, Path]] = []
    if plots and sweep is None:
        runs = groups[0][1]
        for key, label, unit, higher in outcomes_present(runs):
            if all(value(run, key) is None for run in runs if run.iteration == 0):
                continue  # Random never got a value (no job finished): nothing to compare with
            figures.append(_boxes(runs, profiles, key, label, unit, higher, d))
            figures.append(_cdf(runs, profiles, key, label, higher, d))
            if len(runs[0].outcome.web_by_tenant) > 1 and key == "web":
                figures.append(_tenants(runs, profiles, d))
            if max(run.iteration for run in runs) > 1:
                figures.append(_iterations(runs, profiles, key, label, higher, d))
        figures.append(_runtimes(runs, profiles, d))
        if any(run.gap is not None for run in runs):
            figures.append(_gaps(runs, d))
    if plots and sweep is not None:
        all_stats = [entry["stats"] for entry in doc["values"]]
        for key, label, _, higher in outcomes_present([run for _, runs in groups for run in runs]):
            figures.append(_sweep_bars(all_stats, profiles, sweep, key, label, higher, d))
    (d / "report.html").write_text(_html(doc, groups, profiles, figures, sweep), encoding="utf-8")


TRIALS_FILE = "trials.parquet"
TRIAL_COLUMNS = ("trial", "profile", "iteration", "web_rps", "job_time", "jobs_finished", "objective")
TRIAL_COLUMNS += ("seconds", "moves", "gap")


def _trial_rows(groups) -> list[list]:
    """One row per run: the swept value (None without a sweep), then TRIAL_COLUMNS."""
    return [[swept_value, *_trial_row(run)] for swept_value, runs in groups for run in runs]


def _trial_row(r: TrialRun) -> list:
    """A run's TRIAL_COLUMNS."""
    outcome = r.outcome
    return [r.trial, r.profile, r.iteration, outcome.web_rps, outcome.job_time, outcome.jobs_finished, r.objective,
            r.seconds, r.moves, r.gap]  # fmt: skip


def _write_csv(path: Path, rows: list[list]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["value", *TRIAL_COLUMNS])
        writer.writerows(rows)


def _write_parquet(path: Path, rows: list[list], scenario: Scenario, sweep) -> None:
    """The runs as one tidy table: scenario, seed, [params] and the swept key (by its name) first."""
    columns = label_columns({"scenario": scenario.name, "seed": scenario.seed, **scenario.params}, len(rows))
    if sweep is not None:
        columns[sweep.key] = _column([row[0] for row in rows])
    for column_index, name in enumerate(TRIAL_COLUMNS, start=1):
        columns[name] = pa.array([row[column_index] for row in rows])
    write_table(pa.table(columns), path)


def _column(values: list) -> pa.Array:
    """Values of one type as that type; a sweep of mixed types (1 and "2GiB") as their text."""
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([str(item) for item in values])


def _final(runs: list[TrialRun], profile: str) -> list[TrialRun]:
    mine = [run for run in runs if run.profile == profile]
    it = max(run.iteration for run in mine)
    return [run for run in mine if run.iteration == it]


def _save(fig, path: Path, caption: str) -> tuple[str, Path]:
    return caption, save(fig, path)


def _sweep_bars(all_stats, profiles, sweep, key, label, higher, d: Path):
    """Table III as bars: per swept value (with its lockstep keys), each profile's median relative change."""
    parts = [sweep, *sweep.lockstep]
    names = ["\n".join(str(swept.values[value_index]) for swept in parts) for value_index in range(len(all_stats))]
    shown = [profile for profile in profiles if profile != RANDOM]
    fig, (ax,) = figure(width=max(6.0, 0.6 * len(names) * len(shown) + 2), height=3.8)
    width = 0.8 / len(shown)
    for slot, profile in enumerate(shown):
        change = [100 * (st[profile][key]["relative_median"] - 1) for st in all_stats]
        xs = np.arange(len(names)) + (slot - (len(shown) - 1) / 2) * width
        bars = ax.bar(xs, change, width, label=profile, color=f"C{profiles.index(profile)}")
        ax.bar_label(bars, [f"{percent:+.0f}%" for percent in change], fontsize=6)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(range(len(names)), names, fontsize=7)
    ax.set_xlabel(" / ".join(swept.key for swept in parts), fontsize=8)
    better = "faster" if not higher else "more"
    ax.set_ylabel(f"median change vs Random (%, {better} is up)", fontsize=8)
    ax.set_title(f"{label}: median change against each trial's Random placement", fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    figure_legend(fig)
    return _save(
        fig,
        d / f"sweep_{key}.png",
        f"Median relative {label} against each trial's Random placement, per swept value (the paper's Table III).",
    )


def _boxes(runs, profiles, key, label, unit, higher, d: Path):
    base = [value(run, key) for run in runs if run.iteration == 0 and value(run, key) is not None]
    ref = float(np.median(base))
    data = [
        [value(run, key) / ref for run in _final(runs, profile) if value(run, key) is not None] for profile in profiles
    ]
    fig, (ax,) = figure(width=8, height=3.8)
    ax.boxplot(data, showfliers=True, flierprops={"marker": "x"})
    ax.set_xticks(range(1, len(profiles) + 1), profiles, rotation=20)
    for position, vals in enumerate(data, start=1):
        if vals:
            median = float(np.median(vals))
            change = (median - 1) if higher else (1 / median - 1)
            ax.text(position, ax.get_ylim()[1], f"{change:+.0%}", ha="center", va="bottom", fontsize=8)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_ylabel(f"{label} / Random's median")
    ax.set_title(f"{label} per algorithm (Random's median {ref:.4g} {unit})", fontsize=10, pad=16)
    ax.grid(alpha=0.3, axis="y")
    return _save(
        fig,
        d / f"box_{key}.png",
        f"{label} of each placement, normalized to Random's median; the "
        "change of each median is printed above its box (the paper's Fig. 4a/5a/7a).",
    )


def _cdf(runs, profiles, key, label, higher, d: Path):
    base = {run.trial: run for run in runs if run.iteration == 0}
    fig, (ax,) = figure(width=7, height=3.6)
    for profile_index, profile in enumerate(profiles):
        if profile == RANDOM:
            continue
        rel = np.sort([relative(run, base[run.trial], key, higher) for run in _final(runs, profile)])
        rel = rel[np.isfinite(rel)]
        ax.step(
            rel, np.arange(1, len(rel) + 1) / max(len(rel), 1), where="post", label=profile, color=f"C{profile_index}"
        )
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("relative performance (" + ("after / before" if higher else "time before / after") + ")")
    ax.set_ylabel("fraction of placements")
    ax.set_title(f"{label}: each placement against the Random placement it was measured on", fontsize=10)
    ax.grid(alpha=0.3)
    figure_legend(fig)
    return _save(
        fig,
        d / f"cdf_{key}.png",
        "CDF of each placement's performance relative to its Random "
        "placement: right of 1 is better (the paper's Fig. 4c/5b/7b).",
    )


def _tenants(runs, profiles, d: Path):
    base = {run.trial: run for run in runs if run.iteration == 0}
    tenants = list(runs[0].outcome.web_by_tenant)
    fig, (ax,) = figure(width=8, height=3.6)
    shown = [profile for profile in profiles if profile != RANDOM]
    for profile in shown:
        med = [np.median(ratios) for ratios in tenant_relative(_final(runs, profile), base).values()]
        ax.plot(range(len(tenants)), med, marker="o", ms=4, lw=0.8, label=profile, color=f"C{profiles.index(profile)}")
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xticks(range(len(tenants)), tenants, rotation=30, fontsize=7)
    ax.set_ylabel("median requests/s after / before")
    ax.set_title("per tenant (web workload entry): median relative throughput", fontsize=10)
    ax.grid(alpha=0.3)
    figure_legend(fig)
    return _save(
        fig,
        d / "tenants.png",
        "Each web tenant's median throughput relative to its Random placement, "
        "per algorithm (the paper's Fig. 7c shows SA All's).",
    )


def _iterations(runs, profiles, key, label, higher, d: Path):
    base = {run.trial: run for run in runs if run.iteration == 0}
    fig, (ax,) = figure(width=7, height=3.6)
    styles = ["-", "--", ":", "-."]
    for profile_index, profile in enumerate(profiles):
        its = sorted({run.iteration for run in runs if run.profile == profile and run.iteration > 0})
        for iteration in its:
            rel = np.sort(
                [
                    relative(run, base[run.trial], key, higher)
                    for run in runs
                    if run.profile == profile and run.iteration == iteration
                ]
            )
            rel = rel[np.isfinite(rel)]
            ax.step(
                rel,
                np.arange(1, len(rel) + 1) / max(len(rel), 1),
                where="post",
                color=f"C{profile_index}",
                ls=styles[(iteration - 1) % 4],
                label=f"{profile} #{iteration}",
            )
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("relative performance against the first Random placement")
    ax.set_ylabel("fraction of placements")
    ax.set_title(f"{label}: iterations of measure, optimize, run", fontsize=10)
    ax.grid(alpha=0.3)
    figure_legend(fig)
    return _save(
        fig,
        d / f"iterations_{key}.png",
        "CDF per iteration: each measures the previous iteration's placement and re-places again (the paper's Fig. 6).",
    )


def _runtimes(runs, profiles, d: Path):
    shown = [profile for profile in profiles if profile != RANDOM]
    fig, (ax,) = figure(width=7, height=3.4)
    runtimes = [
        [max(run.seconds, 1e-5) for run in runs if run.profile == profile and run.iteration > 0] for profile in shown
    ]
    ax.boxplot(runtimes)
    ax.set_xticks(range(1, len(shown) + 1), shown, rotation=20)
    set_value_axis(ax, "optimizer runtime (s)", [seconds for per_profile in runtimes for seconds in per_profile])
    ax.set_title("optimizer runtime per placement (one core)", fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    return _save(fig, d / "runtimes.png", "Each algorithm's runtime per placement (the paper's Fig. 7f).")


def _gaps(runs, d: Path):
    gaps = np.sort([run.gap for run in runs if run.gap is not None])
    fig, (ax,) = figure(width=6, height=3.2)
    ax.step(gaps * 100, np.arange(1, len(gaps) + 1) / len(gaps), where="post")
    ax.set_xlabel("gap HiGHS reached within its time limit (%)")
    ax.set_ylabel("fraction of placements")
    ax.set_title("Model: optimality gap", fontsize=10)
    ax.grid(alpha=0.3)
    return _save(fig, d / "model_gap.png", "CDF of the gap Model reached (the paper's Fig. 4b).")


def _html(doc, groups, profiles, figures, sweep) -> str:
    escape = html.escape
    sc = doc["scenario"]
    parts = [
        "<!doctype html><meta charset='utf-8'><title>" + escape(sc["name"]) + "</title>",
        "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th:first-child,td:first-child{text-align:left}"
        "</style>",
        f"<h1>{escape(sc['name'])}</h1><p>{escape(sc['description'])}</p>",
        f"<p>{sc['trials']['count']} Random placements, {sc['trials']['iterations']} iteration(s) per algorithm, "
        f"runs of {sc['duration']:g} s ({sc['trials']['warmup']:g} s warm-up); sova {escape(doc['sova_version'])}.</p>",
    ]
    all_stats = [val["stats"] for val in doc["values"]]  # computed once, for summary.json
    if sweep is not None:
        parts.append(_sweep_table(groups, all_stats, profiles, sweep))
    for (swept_value, runs), stats in zip(groups, all_stats, strict=True):
        title = "" if sweep is None else f"<h2>{escape(sweep.key)} = {escape(str(swept_value))}</h2>"
        parts.append(title + _table(stats, profiles, outcomes_present(runs)))
    for caption, path in figures:
        parts.append(
            f"<figure><img src='{escape(path.name)}' width='800'><figcaption>{escape(caption)}</figcaption></figure>"
        )
    return "\n".join(parts) + "\n"


def _sweep_table(groups, all_stats, profiles, sweep) -> str:
    """One row per swept value (and its lockstep keys): each profile's median relative improvement."""
    parts = [sweep, *sweep.lockstep]
    outcomes = outcomes_present([run for _, runs in groups for run in runs])
    shown = [profile for profile in profiles if profile != RANDOM]
    head = [swept.key for swept in parts] + [f"{label}: {profile}" for _, label, _, _ in outcomes for profile in shown]
    rows = [
        "<h2>Median relative improvement over each trial's Random placement</h2><table><tr>"
        + "".join(f"<th>{html.escape(heading)}</th>" for heading in head)
        + "</tr>"
    ]
    for value_index, stats in enumerate(all_stats):
        cells = [str(swept.values[value_index]) for swept in parts]
        cells += [f"{stats[profile][key]['relative_median'] - 1:+.0%}" for key, *_ in outcomes for profile in shown]
        rows.append("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in cells) + "</tr>")
    return "\n".join(rows) + "</table>"


def _table(stats, profiles, outcomes) -> str:
    head = ["profile"]
    for _, label, _, _ in outcomes:
        head += [f"{label}: median vs Random's", "median relative", "improved", "harmed"]
    head += ["objective (median)", "runtime (median s)", "moves (median)"]
    rows = ["<table><tr>" + "".join(f"<th>{html.escape(heading)}</th>" for heading in head) + "</tr>"]
    for profile in profiles:
        profile_summary = stats[profile]
        cells = [html.escape(profile)]
        for key, *_ in outcomes:
            outcome_stats = profile_summary[key]
            cells += [
                f"{outcome_stats['median_vs_random_median'] - 1:+.0%}",
                f"{outcome_stats['relative_median']:.2f}",
                f"{outcome_stats['improved']:.0%}",
                f"{outcome_stats['harmed']:.0%}",
            ]
        cells += [
            f"{profile_summary['objective_median']:.3f}",
            f"{profile_summary['seconds_median']:.3g}",
            f"{profile_summary['moves_median']:.0f}",
        ]
        rows.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    return "\n".join(rows) + "</table>"
