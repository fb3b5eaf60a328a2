"""PNG plots of storage SLOs (SASLO): each VM's SC rate, PF ratio and AVPE per profile (its Fig. 6); for
tenants whose targets follow a schedule, throughput, SC rate and AVPE at each target (its Fig. 4); and
every 30 s, each VM's target and throughput, SC rate, PF ratio, IO size limit and size (its Figs. 9-11)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sova.experiments.scenario_runs import ProfileResult
from sova.report.names import truncate
from sova.report.plot_style import figure, figure_legend, save

SCORES = (("sc_rate", "SC rate (%)"), ("pf_ratio", "PF ratio (%)"), ("avpe", "AVPE (%)"))
VM_BARS_MAX = 30  # more VMs under SLO are not drawn one bar each


def slo_plots(results: list[ProfileResult], out: Path) -> list[tuple[str, Path]]:
    """The SLO figures of a run whose profiles ran an IO controller; none otherwise."""
    with_slo = [r for r in results if r.summary.get("slo")]
    plots = []
    vms = sorted({vm for r in with_slo for vm in r.summary["slo"]})
    if with_slo and len(vms) <= VM_BARS_MAX:
        plots.append(_scores(with_slo, vms, out / "slo_scores.png"))
    for r in with_slo:
        levels = {vm: s["levels"] for vm, s in r.summary["slo"].items() if s.get("levels")}
        if levels:
            plots.append(_by_target(r.profile, levels, out / f"slo_levels-{r.profile}.png"))
        if r.slo_intervals:
            plots.append(_over_time(r.profile, r.slo_intervals, out / f"slo_intervals-{r.profile}.png"))
    return plots


def _scores(results: list[ProfileResult], vms: list[str], path: Path) -> tuple[str, Path]:
    """Grouped bars: one group per VM, one bar per profile, for each of SC rate, PF ratio and AVPE."""
    fig, axes = figure(3, width=12, height=3.4)
    width = 0.8 / len(results)
    for ax, (key, label) in zip(axes, SCORES, strict=True):
        for k, r in enumerate(results):
            values = [r.summary["slo"].get(vm, {}).get(key, np.nan) for vm in vms]
            ax.bar(
                np.arange(len(vms)) + (k - (len(results) - 1) / 2) * width,
                values,
                width,
                color=f"C{k}",
                label=truncate(r.profile, 24),
            )
        ax.set_xticks(range(len(vms)), [truncate(vm, 12) for vm in vms], fontsize=8)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3, axis="y")
    axes[0].set_title("over the whole run, per VM and profile", fontsize=10, loc="left")
    figure_legend(fig)
    caption = "SLO compliance (SC rate), fluctuation (PF ratio) and error of the mean (AVPE) of each VM, per profile."
    return caption, save(fig, path)


def _by_target(profile: str, levels: dict[str, list[dict]], path: Path) -> tuple[str, Path]:
    """Throughput against target (the diagonal: on target), SC rate and AVPE at each target, one line per VM."""
    fig, axes = figure(3, width=12, height=3.4)
    for k, (vm, rows) in enumerate(sorted(levels.items())):
        target = [row["target"] for row in rows]
        style = {"marker": "o", "ms": 3, "lw": 1.1, "color": f"C{k}", "label": truncate(vm, 16)}
        axes[0].plot(target, [row["throughput_mean"] for row in rows], **style)
        axes[1].plot(target, [row.get("sc_rate", np.nan) for row in rows], **style)
        axes[2].plot(target, [row.get("avpe", np.nan) for row in rows], **style)
    every = [row["target"] for rows in levels.values() for row in rows]
    axes[0].plot([min(every), max(every)], [min(every), max(every)], color="grey", lw=0.6, ls="--")
    for ax, label in zip(axes, ("throughput (IOPS)", "SC rate (%)", "AVPE (%)"), strict=True):
        ax.set_xlabel("throughput target (IOPS)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_title(f"{truncate(profile, 24)}: at each target", fontsize=10, loc="left")
    figure_legend(fig)
    caption = f"{profile}: each VM's throughput (the dashed diagonal is on target), SC rate and AVPE at each target."
    return caption, save(fig, path)


def _over_time(profile: str, rows: list[dict], path: Path) -> tuple[str, Path]:
    """Per 30 s interval, one colour per VM: target (dashed) and throughput, SC rate, PF ratio, and the IO
    size limit (dashed) and the requests' mean size."""
    sized = any(row["io_size_limit"] is not None for row in rows)
    fig, axes = figure(4 if sized else 3, width=14 if sized else 12, height=3.4)
    vms = sorted({row["vm"] for row in rows})

    def column(vm_rows, key, scale=1.0):
        return [np.nan if row[key] is None else row[key] * scale for row in vm_rows]

    for k, vm in enumerate(vms):
        mine = [row for row in rows if row["vm"] == vm]
        minutes = [row["time"] / 60 for row in mine]
        style = {"lw": 1.1, "color": f"C{k}"}
        axes[0].plot(minutes, column(mine, "throughput"), label=truncate(vm, 16), **style)
        axes[0].plot(minutes, column(mine, "target"), ls="--", **style)
        axes[1].plot(minutes, column(mine, "sc_rate"), **style)
        axes[2].plot(minutes, column(mine, "pf_ratio"), **style)
        if sized:
            axes[3].plot(minutes, column(mine, "io_size", 1 / 1024), **style)
            axes[3].plot(minutes, column(mine, "io_size_limit", 1 / 1024), ls="--", **style)
    labels = ("throughput (IOPS); target dashed", "SC rate (%)", "PF ratio (%)", "request size (KiB); limit dashed")
    for ax, label in zip(axes, labels, strict=False):
        ax.set_xlabel("time (min)")
        ax.set_ylabel(label, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_title(f"{truncate(profile, 24)}: every 30 s", fontsize=10, loc="left")
    figure_legend(fig)
    caption = (
        f"{profile}: every 30 s, each VM's throughput against its target (dashed), its SC rate and PF ratio over "
        "those 30 s" + (", and its requests' size against its IO size limit (dashed)." if sized else ".")
    )
    return caption, save(fig, path)
