"""Per-host utilisation plots: every host as a line when there are few, else the distribution across hosts.

Up to LINES_MAX hosts each host is a line of its own colour (the same in every profile's panel). Above that,
lines of one colour each cannot be told apart, so a panel shows the distribution across hosts per step
(p5-p95 and p25-p75 bands and the median) and the EXTREME_HOSTS hottest and coolest hosts by their mean
over the run, named at the end of their lines. Small runs have every host's series, and the bands are
computed from them; large runs (above the recorder's PER_HOST_MAX) have only the recorder's percentile
and extreme-host series, which this reads the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from sova.experiments.scenario_runs import ProfileResult
from sova.report.names import truncate
from sova.report.plot_style import (
    figure,
    figure_legend,
    mark_migrations,
    migration_handle,
    plot_series,
    save,
    smooth,
    smoothing_window,
    time_axis,
)
from sova.sim.recorder import EXTREME_HOSTS, HOST_PERCENTILES

LINES_MAX = 8
HOT_COLOR, COOL_COLOR, BAND_COLOR = "tab:red", "tab:green", "tab:blue"


@dataclass
class HostSpread:
    """One profile's hosts for one metric: percentiles across hosts per sample, and the extreme hosts."""

    percentiles: dict[int, np.ndarray]
    hottest: dict[str, np.ndarray]
    coolest: dict[str, np.ndarray]


def host_columns(series: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    """Every host's own series ("cpu:hm1" -> hm1), present when the run has at most PER_HOST_MAX hosts."""
    return {k.split(":", 1)[1]: v for k, v in series.items() if k.startswith(f"{prefix}:")}


def host_spread(series: dict[str, np.ndarray], prefix: str) -> HostSpread | None:
    """The distribution across hosts, from the recorder's percentile columns or from every host's series."""
    if f"{prefix}_p50" in series:
        return HostSpread(
            {q: series[f"{prefix}_p{q}"] for q in HOST_PERCENTILES},
            host_columns(series, f"{prefix}_hottest"),
            host_columns(series, f"{prefix}_coolest"),
        )
    hosts = host_columns(series, prefix)
    if not hosts:
        return None
    names = sorted(hosts, key=lambda h: -float(np.mean(hosts[h])))  # hottest first; stable for ties
    stacked = np.vstack([hosts[h] for h in names])
    count = min(EXTREME_HOSTS, len(names) // 2)
    return HostSpread(
        {q: np.percentile(stacked, q, axis=0) for q in HOST_PERCENTILES},
        {h: hosts[h] for h in names[:count]},
        {h: hosts[h] for h in names[::-1][:count]},
    )


def host_plot(results: list[ProfileResult], prefix: str, what: str, path: Path) -> tuple[str, Path] | None:
    """The per-host figure of a metric (prefix "cpu" or "nic_tx"), one panel per profile; None without data."""
    hosts = host_columns(results[0].series, prefix)
    if hosts and len(hosts) <= LINES_MAX and f"{prefix}_p50" not in results[0].series:
        return _every_host(results, prefix, what, list(hosts), path)
    if host_spread(results[0].series, prefix) is None:
        return None
    return _distribution(results, prefix, what, path)


def _every_host(results, prefix: str, what: str, names: list[str], path: Path) -> tuple[str, Path]:
    fig, axes = figure(len(results))
    for ax, r in zip(axes, results, strict=True):
        minutes = r.series["time"] / 60
        for k, name in enumerate(names):
            plot_series(ax, minutes, r.series[f"{prefix}:{name}"], color=f"C{k}", lw=1.1)
        _panel(ax, r, what)
    handles = [Line2D([], [], color=f"C{k}", lw=1.5, label=truncate(n)) for k, n in enumerate(names)]
    figure_legend(fig, [*handles, migration_handle()])
    return (f"{what} utilisation of every host, one panel per profile, with migration starts.", save(fig, path))


def _distribution(results, prefix: str, what: str, path: Path) -> tuple[str, Path]:
    fig, axes = figure(len(results))
    for ax, r in zip(axes, results, strict=True):
        spread = host_spread(r.series, prefix)
        minutes = r.series["time"] / 60
        window = smoothing_window(len(minutes))
        band = {q: smooth(v, window) for q, v in spread.percentiles.items()}
        ax.fill_between(minutes, band[5], band[95], color=BAND_COLOR, alpha=0.15, lw=0)
        ax.fill_between(minutes, band[25], band[75], color=BAND_COLOR, alpha=0.3, lw=0)
        plot_series(ax, minutes, spread.percentiles[50], color=BAND_COLOR, lw=1.2)
        ends = []
        for hosts, color in ((spread.hottest, HOT_COLOR), (spread.coolest, COOL_COLOR)):
            for name, values in hosts.items():
                line = plot_series(ax, minutes, values, color=color, lw=0.9)
                ends.append((float(line.get_ydata()[-1]), name, color))
        _name_line_ends(ax, minutes[-1], ends)
        _panel(ax, r, what)
    count = len(spread.hottest)
    handles = [
        Patch(color=BAND_COLOR, alpha=0.15, label="p5–p95 of hosts"),
        Patch(color=BAND_COLOR, alpha=0.3, label="p25–p75"),
        Line2D([], [], color=BAND_COLOR, lw=1.2, label="median host"),
        Line2D([], [], color=HOT_COLOR, lw=0.9, label=f"{count} hottest hosts (by mean)"),
        Line2D([], [], color=COOL_COLOR, lw=0.9, label=f"{count} coolest hosts"),
        migration_handle(),
    ]
    figure_legend(fig, handles)
    caption = (
        f"{what} utilisation across hosts, one panel per profile: percentile bands over all hosts at each "
        f"step, the {count} hottest and {count} coolest hosts by their mean (named at the right), migration starts."
    )
    return caption, save(fig, path)


def _name_line_ends(ax, x: float, ends: list[tuple[float, str, str]], gap: float = 0.055) -> None:
    """Write each name right of its line's end, moved apart vertically (on the 0-1.05 axis) so none overlap."""
    placed: list[float] = []
    for y, name, color in sorted((e for e in ends if np.isfinite(e[0])), key=lambda e: e[0]):
        y_text = max(y, placed[-1] + gap) if placed else y
        placed.append(y_text)
        ax.annotate(
            truncate(name, 14),
            (x, y),
            xytext=(x, y_text),
            textcoords="data",
            fontsize=6,
            color=color,
            va="center",
            annotation_clip=False,
        )


def _panel(ax, result: ProfileResult, what: str) -> None:
    mark_migrations(ax, [m.started for m in result.migrations])
    ax.set_title(f"{truncate(result.profile, 30)}: {what} per host", fontsize=10)
    ax.set_ylabel(f"{what} utilisation")
    ax.set_ylim(0, 1.05)
    time_axis(ax)
