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
    a, b = value(run, key), value(before, key)
    if a is None or b is None or a <= 0 or b <= 0:
        return float("nan")
    return a / b if higher else b / a


def tenant_relative(runs: list[TrialRun], base: dict[int, TrialRun]) -> dict[str, np.ndarray]:
    """Per web tenant: each run's throughput relative to its trial's Random placement."""
    tenants = runs[0].outcome.web_by_tenant if runs else {}
    return {
        t: np.array([r.outcome.web_by_tenant[t] / max(base[r.trial].outcome.web_by_tenant[t], 1e-300) for r in runs])
        for t in tenants
    }


def outcomes_present(runs: list[TrialRun]) -> list[tuple[str, str, str, bool]]:
    return [o for o in OUTCOMES if any(value(r, o[0]) is not None for r in runs)]


def profile_stats(runs: list[TrialRun], profiles: list[str]) -> dict[str, dict]:
    """Per profile (its last iteration): medians of each outcome, of relative performance, and more."""
    base = {r.trial: r for r in runs if r.iteration == 0}
    out = {}
    for p in profiles:
        mine = _final(runs, p)
        st: dict = {
            "runs": len(mine),
            "objective_median": float(np.median([r.objective for r in mine])),
            "seconds_median": float(np.median([r.seconds for r in mine])),
            "seconds_max": float(np.max([r.seconds for r in mine])),
            "moves_median": float(np.median([r.moves for r in mine])),
        }
        gaps = [r.gap for r in mine if r.gap is not None]
        if gaps:
            st["gap_median"] = float(np.median(gaps))
            st["gap_within_10pct"] = float(np.mean(np.array(gaps) <= 0.1 + 1e-9))
        for key, _, _, higher in outcomes_present(runs):
            vals = np.array([np.nan if value(r, key) is None else value(r, key) for r in mine], dtype=float)
            rel = np.array([relative(r, base[r.trial], key, higher) for r in mine])
            ref = _median([np.nan if value(b, key) is None else value(b, key) for b in base.values()])
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
                    t: {"relative_median": float(np.median(r)), "improved": float(np.mean(r > 1.001))}
                    for t, r in by_tenant.items()
                },
            }
        out[p] = st
    return out


def _median(values) -> np.float64:
    """The median of the values that are not NaN (runs whose job never finished); NaN if there are none."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    return np.median(x) if len(x) else np.float64(np.nan)


def trials_document(scenario: Scenario, groups: list[tuple[object, list[TrialRun]]], profiles, sweep=None) -> dict:
    return {
        "sova_version": __version__,
        "scenario": {**scenario_header(scenario), "trials": asdict(scenario.trials)},
        "sweep": None
        if sweep is None
        else [{"table": x.table, "key": x.key, "values": list(x.values)} for x in (sweep, *sweep.lockstep)],
        "profiles": profiles,
        "values": [
            {"value": v, "stats": profile_stats(runs, profiles), "runs": [asdict(r) for r in runs]}
            for v, runs in groups
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
            if all(value(r, key) is None for r in runs if r.iteration == 0):
                continue  # Random never got a value (no job finished): nothing to compare with
            figures.append(_boxes(runs, profiles, key, label, unit, higher, d))
            figures.append(_cdf(runs, profiles, key, label, higher, d))
            if len(runs[0].outcome.web_by_tenant) > 1 and key == "web":
                figures.append(_tenants(runs, profiles, d))
            if max(r.iteration for r in runs) > 1:
                figures.append(_iterations(runs, profiles, key, label, higher, d))
        figures.append(_runtimes(runs, profiles, d))
        if any(r.gap is not None for r in runs):
            figures.append(_gaps(runs, d))
    if plots and sweep is not None:
        all_stats = [v["stats"] for v in doc["values"]]
        for key, label, _, higher in outcomes_present([r for _, runs in groups for r in runs]):
            figures.append(_sweep_bars(all_stats, profiles, sweep, key, label, higher, d))
    (d / "report.html").write_text(_html(doc, groups, profiles, figures, sweep), encoding="utf-8")


TRIALS_FILE = "trials.parquet"
TRIAL_COLUMNS = ("trial", "profile", "iteration", "web_rps", "job_time", "jobs_finished", "objective")
TRIAL_COLUMNS += ("seconds", "moves", "gap")


def _trial_rows(groups) -> list[list]:
    """One row per run: the swept value (None without a sweep), then TRIAL_COLUMNS."""
    return [[v, *_trial_row(r)] for v, runs in groups for r in runs]


def _trial_row(r: TrialRun) -> list:
    """A run's TRIAL_COLUMNS."""
    outcome = r.outcome
    return [r.trial, r.profile, r.iteration, outcome.web_rps, outcome.job_time, outcome.jobs_finished, r.objective,
            r.seconds, r.moves, r.gap]  # fmt: skip


def _write_csv(path: Path, rows: list[list]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["value", *TRIAL_COLUMNS])
        w.writerows(rows)


def _write_parquet(path: Path, rows: list[list], scenario: Scenario, sweep) -> None:
    """The runs as one tidy table: scenario, seed, [params] and the swept key (by its name) first."""
    columns = label_columns({"scenario": scenario.name, "seed": scenario.seed, **scenario.params}, len(rows))
    if sweep is not None:
        columns[sweep.key] = _column([row[0] for row in rows])
    for k, name in enumerate(TRIAL_COLUMNS, start=1):
        columns[name] = pa.array([row[k] for row in rows])
    write_table(pa.table(columns), path)


def _column(values: list) -> pa.Array:
    """Values of one type as that type; a sweep of mixed types (1 and "2GiB") as their text."""
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([str(v) for v in values])


def _final(runs: list[TrialRun], profile: str) -> list[TrialRun]:
    mine = [r for r in runs if r.profile == profile]
    it = max(r.iteration for r in mine)
    return [r for r in mine if r.iteration == it]


def _save(fig, path: Path, caption: str) -> tuple[str, Path]:
    return caption, save(fig, path)


def _sweep_bars(all_stats, profiles, sweep, key, label, higher, d: Path):
    """Table III as bars: per swept value (with its lockstep keys), each profile's median relative change."""
    parts = [sweep, *sweep.lockstep]
    names = ["\n".join(str(x.values[k]) for x in parts) for k in range(len(all_stats))]
    shown = [p for p in profiles if p != RANDOM]
    fig, (ax,) = figure(width=max(6.0, 0.6 * len(names) * len(shown) + 2), height=3.8)
    width = 0.8 / len(shown)
    for i, p in enumerate(shown):
        change = [100 * (st[p][key]["relative_median"] - 1) for st in all_stats]
        xs = np.arange(len(names)) + (i - (len(shown) - 1) / 2) * width
        bars = ax.bar(xs, change, width, label=p, color=f"C{profiles.index(p)}")
        ax.bar_label(bars, [f"{c:+.0f}%" for c in change], fontsize=6)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(range(len(names)), names, fontsize=7)
    ax.set_xlabel(" / ".join(x.key for x in parts), fontsize=8)
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
    base = [value(r, key) for r in runs if r.iteration == 0 and value(r, key) is not None]
    ref = float(np.median(base))
    data = [[value(r, key) / ref for r in _final(runs, p) if value(r, key) is not None] for p in profiles]
    fig, (ax,) = figure(width=8, height=3.8)
    ax.boxplot(data, showfliers=True, flierprops={"marker": "x"})
    ax.set_xticks(range(1, len(profiles) + 1), profiles, rotation=20)
    for i, vals in enumerate(data, start=1):
        if vals:
            m = float(np.median(vals))
            change = (m - 1) if higher else (1 / m - 1)
            ax.text(i, ax.get_ylim()[1], f"{change:+.0%}", ha="center", va="bottom", fontsize=8)
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
    base = {r.trial: r for r in runs if r.iteration == 0}
    fig, (ax,) = figure(width=7, height=3.6)
    for k, p in enumerate(profiles):
        if p == RANDOM:
            continue
        rel = np.sort([relative(r, base[r.trial], key, higher) for r in _final(runs, p)])
        rel = rel[np.isfinite(rel)]
        ax.step(rel, np.arange(1, len(rel) + 1) / max(len(rel), 1), where="post", label=p, color=f"C{k}")
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
    base = {r.trial: r for r in runs if r.iteration == 0}
    tenants = list(runs[0].outcome.web_by_tenant)
    fig, (ax,) = figure(width=8, height=3.6)
    shown = [p for p in profiles if p != RANDOM]
    for p in shown:
        med = [np.median(r) for r in tenant_relative(_final(runs, p), base).values()]
        ax.plot(range(len(tenants)), med, marker="o", ms=4, lw=0.8, label=p, color=f"C{profiles.index(p)}")
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
    base = {r.trial: r for r in runs if r.iteration == 0}
    fig, (ax,) = figure(width=7, height=3.6)
    styles = ["-", "--", ":", "-."]
    for k, p in enumerate(profiles):
        its = sorted({r.iteration for r in runs if r.profile == p and r.iteration > 0})
        for i in its:
            rel = np.sort(
                [relative(r, base[r.trial], key, higher) for r in runs if r.profile == p and r.iteration == i]
            )
            rel = rel[np.isfinite(rel)]
            ax.step(
                rel,
                np.arange(1, len(rel) + 1) / max(len(rel), 1),
                where="post",
                color=f"C{k}",
                ls=styles[(i - 1) % 4],
                label=f"{p} #{i}",
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
    shown = [p for p in profiles if p != RANDOM]
    fig, (ax,) = figure(width=7, height=3.4)
    runtimes = [[max(r.seconds, 1e-5) for r in runs if r.profile == p and r.iteration > 0] for p in shown]
    ax.boxplot(runtimes)
    ax.set_xticks(range(1, len(shown) + 1), shown, rotation=20)
    set_value_axis(ax, "optimizer runtime (s)", [x for per_profile in runtimes for x in per_profile])
    ax.set_title("optimizer runtime per placement (one core)", fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    return _save(fig, d / "runtimes.png", "Each algorithm's runtime per placement (the paper's Fig. 7f).")


def _gaps(runs, d: Path):
    gaps = np.sort([r.gap for r in runs if r.gap is not None])
    fig, (ax,) = figure(width=6, height=3.2)
    ax.step(gaps * 100, np.arange(1, len(gaps) + 1) / len(gaps), where="post")
    ax.set_xlabel("gap HiGHS reached within its time limit (%)")
    ax.set_ylabel("fraction of placements")
    ax.set_title("Model: optimality gap", fontsize=10)
    ax.grid(alpha=0.3)
    return _save(fig, d / "model_gap.png", "CDF of the gap Model reached (the paper's Fig. 4b).")


def _html(doc, groups, profiles, figures, sweep) -> str:
    e = html.escape
    sc = doc["scenario"]
    parts = [
        "<!doctype html><meta charset='utf-8'><title>" + e(sc["name"]) + "</title>",
        "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th:first-child,td:first-child{text-align:left}"
        "</style>",
        f"<h1>{e(sc['name'])}</h1><p>{e(sc['description'])}</p>",
        f"<p>{sc['trials']['count']} Random placements, {sc['trials']['iterations']} iteration(s) per algorithm, "
        f"runs of {sc['duration']:g} s ({sc['trials']['warmup']:g} s warm-up); sova {e(doc['sova_version'])}.</p>",
    ]
    all_stats = [val["stats"] for val in doc["values"]]  # computed once, for summary.json
    if sweep is not None:
        parts.append(_sweep_table(groups, all_stats, profiles, sweep))
    for (v, runs), stats in zip(groups, all_stats, strict=True):
        title = "" if sweep is None else f"<h2>{e(sweep.key)} = {e(str(v))}</h2>"
        parts.append(title + _table(stats, profiles, outcomes_present(runs)))
    for caption, path in figures:
        parts.append(f"<figure><img src='{e(path.name)}' width='800'><figcaption>{e(caption)}</figcaption></figure>")
    return "\n".join(parts) + "\n"


def _sweep_table(groups, all_stats, profiles, sweep) -> str:
    """One row per swept value (and its lockstep keys): each profile's median relative improvement."""
    parts = [sweep, *sweep.lockstep]
    outcomes = outcomes_present([r for _, runs in groups for r in runs])
    shown = [p for p in profiles if p != RANDOM]
    head = [x.key for x in parts] + [f"{label}: {p}" for _, label, _, _ in outcomes for p in shown]
    rows = [
        "<h2>Median relative improvement over each trial's Random placement</h2><table><tr>"
        + "".join(f"<th>{html.escape(h)}</th>" for h in head)
        + "</tr>"
    ]
    for k, stats in enumerate(all_stats):
        cells = [str(x.values[k]) for x in parts]
        cells += [f"{stats[p][key]['relative_median'] - 1:+.0%}" for key, *_ in outcomes for p in shown]
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return "\n".join(rows) + "</table>"


def _table(stats, profiles, outcomes) -> str:
    head = ["profile"]
    for _, label, _, _ in outcomes:
        head += [f"{label}: median vs Random's", "median relative", "improved", "harmed"]
    head += ["objective (median)", "runtime (median s)", "moves (median)"]
    rows = ["<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for p in profiles:
        s = stats[p]
        cells = [html.escape(p)]
        for key, *_ in outcomes:
            o = s[key]
            cells += [
                f"{o['median_vs_random_median'] - 1:+.0%}",
                f"{o['relative_median']:.2f}",
                f"{o['improved']:.0%}",
                f"{o['harmed']:.0%}",
            ]
        cells += [f"{s['objective_median']:.3f}", f"{s['seconds_median']:.3g}", f"{s['moves_median']:.0f}"]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return "\n".join(rows) + "</table>"
