"""Results of a sweep: summary.json, one CSV per profile, metric-against-value plots, report.html."""

from __future__ import annotations

import csv
import html
import warnings
from dataclasses import asdict
from pathlib import Path

import numpy as np

from sova import __version__
from sova.experiments.scenario_runs import SweepRun
from sova.model.scenario import Scenario
from sova.model.sweep import Sweep
from sova.report.host_plots import LINES_MAX
from sova.report.metrics import is_number, metric_at, metric_value
from sova.report.metrics_table import FILE, run_table, stacked, write_table
from sova.report.names import profile_list, truncate
from sova.report.plot_style import figure, figure_legend, save, set_value_axis
from sova.report.summary_file import scenario_header, write_summary

# what a sweep plots against its value: (label, path in a profile summary); units from report.metrics
SWEPT = [
    ("mean response time", "services.response_mean"),
    ("p99 response time", "services.response_p99"),
    ("requests dropped", "services.dropped"),
    ("VM network throughput, sent", "network.guest_tx_gbps"),
    ("VM network throughput, received", "network.guest_rx_gbps"),
    ("throughput", "services.throughput_rps"),
    ("hottest host CPU, p95", "cpu.host_util_max_p95"),
    ("mean of max NIC tx utilisation", "network.nic_tx_util_max_mean"),
    ("migrations completed", "migrations.completed"),
    ("batch job completion time", "batch.completion_mean"),
    ("storage throughput", "storage.throughput_mean"),
    ("mean Dom0 utilisation", "cpu.dom0_util_mean"),
    ("predicted V-slowdown (CloudScope), mean", "interference.slowdown_mean"),
    ("file transfer time", "transfers.completion_mean"),
    ("energy", "energy_kwh"),
]


def swept(label: str, path: str) -> tuple[str, str, float, str]:
    """(label, path, scale, unit) of a swept metric, scale and unit as the profiles table shows them."""
    unit = metric_at(path).unit
    return label, path, unit.scale, unit.suffix.strip()


def sweep_document(sweep: Sweep, scenarios: list[Scenario], runs: list[SweepRun]) -> dict:
    first = scenarios[0]
    return {
        "sova_version": __version__,
        "scenario": scenario_header(first),
        "sweep": {
            "table": sweep.table,
            "key": sweep.key,
            "match": sweep.match,
            "kind": sweep.kind,
            "values": list(sweep.values),
        },
        "runs": [
            {
                "value": run.value,
                "profiles": {result.profile: result.summary for result in run.results},
                "services": {result.profile: result.services for result in run.results},
                "migrations": {
                    result.profile: [asdict(migration) for migration in result.migrations] for result in run.results
                },
            }
            for run in runs
        ],
    }


def write_sweep(sweep: Sweep, scenarios: list[Scenario], runs: list[SweepRun], d: Path, plots: bool) -> None:
    doc = sweep_document(sweep, scenarios, runs)
    write_summary(d, doc)
    tables = [
        run_table(scenario, run.results, {sweep.key: run.value}) for scenario, run in zip(scenarios, runs, strict=True)
    ]
    write_table(stacked(tables), d / FILE)
    profiles = [result.profile for result in runs[0].results]
    metrics = [
        swept(label, path)
        for label, path in SWEPT
        if any(metric_value(result.summary, path) is not None for run in runs for result in run.results)
    ]
    for profile in profiles:
        with (d / f"sweep-{profile}.csv").open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow([sweep.key] + [metric[1] for metric in metrics])
            for run in runs:
                summ = _result(run, profile).summary
                writer.writerow([run.value] + [metric_value(summ, metric[1]) for metric in metrics])
    figures = _plots(sweep, runs, profiles, metrics, d) + _by_group_plots(sweep, runs, profiles, d) if plots else []
    (d / "report.html").write_text(_html(doc, sweep, runs, profiles, metrics, figures), encoding="utf-8")


def _plots(sweep, runs, profiles, metrics, d: Path) -> list[tuple[str, Path]]:
    out = []
    values = [run.value for run in runs]
    for label, path, scale, unit in metrics:
        fig, (ax,) = figure(width=7.0)
        xs = _x_axis(ax, values)
        every = []
        for profile_index, profile in enumerate(profiles):
            ys = [_scaled(metric_value(_result(run, profile).summary, path), scale) for run in runs]
            every += ys
            ax.plot(xs, ys, marker="o", ms=3, lw=1.2, label=truncate(profile, 24), color=f"C{profile_index}")
        ax.set_xlabel(sweep.axis)
        set_value_axis(ax, f"{label} ({unit})" if unit else label, every)
        ax.set_title(f"{label} against {sweep.axis}: {profile_list(profiles)}", fontsize=11)
        ax.grid(alpha=0.3)
        figure_legend(fig)
        name = save(fig, d / f"sweep_{path.replace('.', '_')}.png")
        out.append((f"{label} for each value of {sweep.axis}, one line per profile.", name))
    return out


def _x_axis(ax, values: list) -> list:
    """Where each swept value sits on the x axis: numbers at themselves (on a log axis when they span two
    orders of magnitude, as block sizes from 1 KB to 4 MB do), anything else (names, ranges) at evenly
    spaced ticks labelled with the value."""
    if not all(isinstance(value, int | float) and not isinstance(value, bool) for value in values):
        ax.set_xticks(range(len(values)), [truncate(_value_label(value), 12) for value in values])
        return list(range(len(values)))
    if min(values) > 0 and max(values) >= 100 * min(values):
        ax.set_xscale("log", base=2)
    return values


def _value_label(value) -> str:
    """A swept value as a tick label: a list (a range) as 'a-b', or 'a' when both ends are equal."""
    if isinstance(value, list | tuple):
        ends = [str(end) for end in value]
        return ends[0] if len(set(ends)) == 1 else "-".join(ends)
    return str(value)


def _scaled(value, scale: float) -> float:
    """The value times scale; NaN (a gap in the line) where the run has no finite value."""
    return value * scale if is_number(value) else np.nan


def _result(run: SweepRun, profile: str):
    return next(result for result in run.results if result.profile == profile)


def _by_group_plots(sweep, runs, profiles, d: Path) -> list[tuple[str, Path]]:
    """Response time by page size (the Sova paper's Fig. 9), NIC utilisation per host (its Fig. 8), and each
    VM's SLO statistics (SASLO's Figs. 5 and 6)."""
    out = []
    first = runs[0].results[0]
    if first.services:

        def response_ms(result, page):
            svc = [service for service in result.services if service["page_bytes"] == page]
            served = sum(service["served"] for service in svc)
            return (
                sum(service["served"] * service["response_mean"] for service in svc if service["served"] > 0)
                / served
                * 1e3
                if served
                else np.nan
            )

        pages = sorted({service["page_bytes"] for service in first.services})
        labels = {page: f"{page / 1024:.0f} KiB" for page in pages}
        path = _panels(
            sweep,
            runs,
            profiles,
            labels,
            response_ms,
            "mean response time (ms)",
            d / "sweep_response_by_page.png",
            log=True,
        )
        out.append(("Mean response time by page size, per profile.", path))
    if "hosts" in first.summary:
        labels = {host: host for host in first.summary["hosts"]}
        path = _panels(
            sweep,
            runs,
            profiles,
            labels,
            lambda result, host: result.summary["hosts"][host]["nic_tx_mean"] * 100,
            "mean NIC transmit utilisation (%)",
            d / "sweep_nic_per_host.png",
            ylim=(0, 105),
        )
        out.append(("Mean NIC transmit utilisation of each host, per profile.", path))
    if "slo" in first.summary:
        labels = {vm: vm for vm in first.summary["slo"]}
        for key, ylabel in SLO_PANELS:

            def of_vm(result, vm, key=key):
                return result.summary.get("slo", {}).get(vm, {}).get(key, np.nan)

            path = _panels(sweep, runs, profiles, labels, of_vm, ylabel, d / f"sweep_slo_{key}.png")
            out.append((f"{ylabel} of each VM under an SLO, per profile.", path))
    return out


SLO_PANELS = (
    ("sc_rate", "SC rate (%)"),
    ("pf_ratio", "PF ratio (%)"),
    ("avpe", "AVPE (%)"),
    ("throughput_mean", "throughput (IOPS)"),
    ("io_size_mean", "request size (bytes)"),
)


def _panels(sweep, runs, profiles, groups: dict, value, ylabel: str, path: Path, log=False, ylim=None) -> Path:
    """One panel per profile, one line per group, value(result, group) against the swept value.

    Up to LINES_MAX groups each is a line; more are drawn as their spread (min, median and max across the
    groups), which stays readable where one line per host would not. `log` allows a log axis where the
    values need one (report.plot_style.set_value_axis).
    """
    fig, axes = figure(len(profiles), width=3.6 * len(profiles), height=3.4)
    for ax, profile in zip(axes, profiles, strict=True):
        xs = _x_axis(ax, [run.value for run in runs])
        table = np.array([[value(_result(run, profile), group) for run in runs] for group in groups], dtype=float)
        if len(groups) <= LINES_MAX:
            for group_index, label in enumerate(groups.values()):
                ax.plot(
                    xs, table[group_index], marker="o", ms=3, lw=1.1, color=f"C{group_index}", label=truncate(label)
                )
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column is a gap
                low, mid, high = np.nanmin(table, 0), np.nanmedian(table, 0), np.nanmax(table, 0)
            ax.fill_between(xs, low, high, color="tab:blue", alpha=0.2, lw=0, label=f"min–max of {len(groups)}")
            ax.plot(xs, mid, marker="o", ms=3, lw=1.1, color="tab:blue", label="median")
        if log:
            set_value_axis(ax, ylabel, table)
        else:
            ax.set_ylabel(ylabel)
        if ylim:
            ax.set_ylim(*ylim)
        ax.set_title(truncate(profile, 30), fontsize=10)
        ax.set_xlabel(sweep.axis, fontsize=8)
        ax.grid(alpha=0.3)
    figure_legend(fig)
    return save(fig, path)


def _html(doc, sweep, runs, profiles, metrics, figures) -> str:
    import base64

    sc = doc["scenario"]
    head = "".join(f"<th>{html.escape(str(run.value))}</th>" for run in runs)
    rows = []
    for label, path, scale, unit in metrics[:3]:
        for profile in profiles:
            cells = []
            for run in runs:
                measured = metric_value(_result(run, profile).summary, path)
                cells.append(f"<td>{measured * scale:.3g}</td>" if is_number(measured) else "<td>n/a</td>")
            rows.append(
                f"<tr><td class='l'>{label} ({unit})</td><td class='l'>{html.escape(profile)}</td>{''.join(cells)}</tr>"
            )
    imgs = "".join(
        f"<figure><img src='data:image/png;base64,{base64.b64encode(png_path.read_bytes()).decode()}'>"
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        for caption, png_path in figures
    )
    css = (
        "body{font-family:Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px}table{border-collapse:collapse;"
        "font-size:13px}th,td{border:1px solid #ddd;padding:3px 7px;text-align:right}td.l{text-align:left}"
        "figcaption{color:#555;font-size:13px}img{max-width:100%}"
    )
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Sova sweep: {html.escape(sc['name'])}"
        f"</title><style>{css}</style></head><body><h1>{html.escape(sc['name'])}</h1>"
        f"<p>{html.escape(sc['description'])}</p><p>Sweep of <code>{html.escape(sweep.table)}.{html.escape(sweep.key)}"
        f"</code> over {len(runs)} values; {sc['duration'] / 60:.0f} simulated minutes per run, seed {sc['seed']}; "
        f"same workload and seed for every profile. Sova {doc['sova_version']}.</p>"
        f"<table><tr><th class='l'>metric</th><th class='l'>profile</th>{head}</tr>{''.join(rows)}</table>"
        f"<h2>Plots</h2>{imgs or '<p>Plots are turned off in [outputs].</p>'}</body></html>"
    )
