"""PNG plots of a run, one figure per question a reader asks, all profiles side by side.

Every figure follows report.plot_style (axis labels, one legend below the panels, smoothed lines over faint
raw samples, linear axes unless a log axis is needed and labelled, truncated names) and names the profiles
it shows in its title or panel titles. Per-host figures are in report.host_plots.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.lines import Line2D

from sova.experiments.scenario_runs import ProfileResult
from sova.report.host_plots import host_plot
from sova.report.metrics import is_number
from sova.report.names import natural_key, profile_list, truncate
from sova.report.plot_style import (
    figure,
    figure_legend,
    needs_log_scale,
    plot_series,
    save,
    set_value_axis,
    time_axis,
)
from sova.report.slo_plots import slo_plots

SERVICE_BARS_MAX = 20  # more web services are drawn as distributions (CDFs), not one bar each
VM_LABELS_MAX = 40  # more VMs in the intensity plot are drawn without a tick label each


def _profiles(results: list[ProfileResult]) -> str:
    return profile_list([result.profile for result in results])


def _per_profile(results, key: str, title: str, ylabel: str, path: Path, scale: float = 1.0, full: float | None = None):
    """One line per profile of series[key] x scale against time; `full` draws a grey line at that value."""
    fig, (ax,) = figure()
    for profile_index, result in enumerate(results):
        plot_series(
            ax,
            result.series["time"] / 60,
            result.series[key] * scale,
            color=f"C{profile_index}",
            label=truncate(result.profile, 24),
        )
    set_value_axis(ax, ylabel, np.concatenate([result.series[key] * scale for result in results]))
    if full is not None:
        ax.axhline(full, color="grey", lw=0.6)
    ax.set_title(f"{title}: {_profiles(results)}", fontsize=11)
    time_axis(ax)
    figure_legend(fig)
    return save(fig, path)


def make_plots(results: list[ProfileResult], out: Path) -> list[tuple[str, Path]]:
    """Write the plots; returns (caption, path) pairs in the order a report shows them."""
    cpu_max = _per_profile(
        results, "host_util_max", "Hottest host's CPU", "CPU utilisation", out / "cpu_max.png", full=1.0
    )
    plots = [("Hottest host's CPU utilisation over time, per profile.", cpu_max)]
    for prefix, what, name in (("cpu", "CPU", "cpu_hosts.png"), ("nic_tx", "NIC transmit", "nic_hosts.png")):
        plot = host_plot(results, prefix, what, out / name)
        if plot is not None:
            plots.append(plot)
    first = results[0]
    if "response_time_mean" in first.series:
        path = _per_profile(
            results,
            "response_time_mean",
            "Mean web response time",
            "response time (ms)",
            out / "response_time.png",
            1e3,
        )
        plots.append(("Mean response time of all web requests served in each step.", path))
    plots.append(("The most utilised NIC (solid) and fabric link (dashed).", _network(results, out / "network.png")))
    plots.append(
        (
            "Power of all hosts (linear model).",
            _per_profile(results, "power_w", "Cluster power", "power (W)", out / "power.png"),
        )
    )
    plots += _intensity(results, out)
    if any(result.vf_events for result in results):
        plots.append(("Bars show when each VM held a VF.", _vf_holders(results, out / "vf_holders.png")))
    with_services = [result for result in results if result.services]
    if with_services:
        plots.append(_services(with_services, out / "services.png"))
    return plots + slo_plots(results, out)


def _network(results, path: Path) -> Path:
    fig, (ax,) = figure()
    for profile_index, result in enumerate(results):
        minutes = result.series["time"] / 60
        name = truncate(result.profile, 24)
        plot_series(ax, minutes, result.series["nic_tx_util_max"], color=f"C{profile_index}", label=f"{name}: NIC tx")
        plot_series(
            ax,
            minutes,
            result.series["link_util_max"],
            color=f"C{profile_index}",
            ls="--",
            lw=1.0,
            label=f"{name}: link",
        )
    ax.set_ylabel("utilisation")
    ax.set_title(f"Most utilised NIC and fabric link: {_profiles(results)}", fontsize=11)
    time_axis(ax)
    figure_legend(fig)
    return save(fig, path)


def _intensity(results, out: Path) -> list[tuple[str, Path]]:
    """IF and NF of each VM, for the first profile that measured them ([outputs] intensity)."""
    result = next((candidate for candidate in results if candidate.summary.get("intensity")), None)
    if result is None:
        return []
    factors = result.summary["intensity"]
    names = list(factors)
    fig, axes = figure(2, width=10)
    for ax, key, label in ((axes[0], "IF", "I/O factor IF"), (axes[1], "NF", "network factor NF")):
        values = np.array([factors[vm][key] for vm in names], dtype=float)
        ax.bar(range(len(names)), values, color="tab:blue")
        if len(names) <= VM_LABELS_MAX:
            ax.set_xticks(range(len(names)), [truncate(vm, 12) for vm in names], rotation=60, fontsize=7)
        ax.set_xlabel("VM")
        set_value_axis(ax, label, values)
        if ax.get_yscale() == "log":  # a zero has no bar on a log axis: say it is zero
            for vm_index in np.flatnonzero(values <= 0):
                ax.annotate(
                    "0", (vm_index, 0), xycoords=("data", "axes fraction"), ha="center", va="bottom", fontsize=7
                )
        ax.set_title(f"{truncate(result.profile, 24)}: {key} per VM over the run", fontsize=10)
        ax.grid(alpha=0.3, axis="y")
    return [
        (
            f"{result.profile}: I/O factor (IF) and network factor (NF) of each VM over the whole run.",
            save(fig, out / f"intensity-{result.profile}.png"),
        )
    ]


def vf_intervals(result: ProfileResult, end: float) -> dict[str, list[tuple[float, float]]]:
    """Per VM, the (start, end) times in seconds during which it held a VF."""
    start: dict[str, float] = dict.fromkeys(result.initial_vfs, 0.0)
    held: dict[str, list[tuple[float, float]]] = {}
    for when, vm, _, event in result.vf_events:
        if event == "attached":
            start.setdefault(vm, when)
        elif vm in start:
            held.setdefault(vm, []).append((start.pop(vm), when))
    for vm, since in start.items():
        held.setdefault(vm, []).append((since, end))
    return held


def _vf_holders(results, path: Path) -> Path:
    shown = [result for result in results if result.vf_events or result.initial_vfs]
    end = max(float(result.series["time"][-1]) for result in results)
    intervals = [vf_intervals(result, end) for result in shown]
    vms = sorted({vm for held in intervals for vm in held}, key=natural_key)
    fig, (ax,) = figure(height=max(2.4, 0.9 + 0.28 * len(vms)))
    offset = 0.6 / max(len(shown), 1)
    for profile_index, held in enumerate(intervals):
        for row, vm in enumerate(vms):
            for start, stop in held.get(vm, []):
                ax.plot(
                    [start / 60, stop / 60],
                    [row + offset * profile_index] * 2,
                    lw=4,
                    color=f"C{profile_index}",
                    solid_capstyle="butt",
                )
    ax.set_yticks(range(len(vms)), [truncate(vm) for vm in vms], fontsize=8)
    ax.set_ylabel("VM")
    ax.set_title(f"Who holds an SR-IOV VF: {_profiles(shown)}", fontsize=11)
    time_axis(ax)
    figure_legend(
        fig,
        [
            Line2D([], [], color=f"C{profile_index}", lw=4, label=truncate(result.profile, 24))
            for profile_index, result in enumerate(shown)
        ],
    )
    return save(fig, path)


def _ms(value) -> float:
    """Seconds as milliseconds to plot; NaN (nothing drawn) without a finite value."""
    return value * 1e3 if is_number(value) else np.nan


def _services(results, path: Path) -> tuple[str, Path]:
    """Bars per service for a few services; for many, the distribution of per-service mean and p95 (CDFs)."""
    if len(results[0].services) <= SERVICE_BARS_MAX:
        return "Mean (bars) and 95th percentile (ticks) response time per service.", _service_bars(results, path)
    return (
        f"Distribution over the {len(results[0].services)} web services of each one's mean (solid) and 95th "
        "percentile (dashed) response time; the slowest services are listed in the page.",
        _service_cdfs(results, path),
    )


def _service_bars(results, path: Path) -> Path:
    names = [service["server"] for service in results[0].services]
    fig, (ax,) = figure()
    width = 0.8 / len(results)
    p95 = []
    for profile_index, result in enumerate(results):
        positions = np.arange(len(names)) + profile_index * width
        ax.bar(
            positions,
            [_ms(service["response_mean"]) for service in result.services],
            width,
            color=f"C{profile_index}",
            label=truncate(result.profile, 24),
        )
        p95 += [_ms(service["response_p95"]) for service in result.services]
        ax.scatter(
            positions, [_ms(service["response_p95"]) for service in result.services], marker="_", s=80, color="black"
        )
    ax.set_xticks(
        np.arange(len(names)) + 0.4 - width / 2, [truncate(name, 14) for name in names], rotation=45, fontsize=7
    )
    set_value_axis(ax, "response time (ms)", p95)
    ax.set_title(f"Response time per web service: {_profiles(results)}", fontsize=11)
    ax.grid(alpha=0.3, axis="y")
    handles = ax.get_legend_handles_labels()[0]
    handles.append(Line2D([], [], marker="_", ms=10, mew=2, ls="", color="black", label="p95"))
    figure_legend(fig, handles)
    return save(fig, path)


def _service_cdfs(results, path: Path) -> Path:
    fig, (ax,) = figure()
    every = []
    for profile_index, result in enumerate(results):
        for key, style, stat in (("response_mean", "-", "mean"), ("response_p95", "--", "p95")):
            values = np.sort(
                [
                    response_ms
                    for response_ms in (_ms(service[key]) for service in result.services)
                    if np.isfinite(response_ms)
                ]
            )
            if not len(values):
                continue  # nothing served by any service: no response times
            every.append(values)
            fraction = np.arange(len(values) + 1) / max(len(values), 1)
            label = f"{truncate(result.profile, 24)} {stat}"
            ax.step(np.r_[values[:1], values], fraction, where="post", color=f"C{profile_index}", ls=style, label=label)
    if every and needs_log_scale(np.concatenate(every)):
        ax.set_xscale("log")
        ax.set_xlabel("response time (ms), log scale")
    else:
        ax.set_xlim(left=0)
        ax.set_xlabel("response time (ms)")
    ax.set_ylabel("fraction of services")
    ax.set_title(f"Response time of the {len(results[0].services)} web services: {_profiles(results)}", fontsize=11)
    ax.grid(alpha=0.3)
    figure_legend(fig)
    return save(fig, path)
