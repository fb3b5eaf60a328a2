"""PNG plots of a run, one figure per question a reader asks, all profiles side by side."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from sova.control.experiment import ProfileResult


def smooth(y: np.ndarray, points: int = 120) -> np.ndarray:
    """Moving average so that about `points` independent values remain: readable at any run length."""
    w = max(1, len(y) // points)
    if w == 1:
        return y
    k = np.ones(w) / w
    pad = np.concatenate([np.full(w // 2, y[0]), y, np.full(w - 1 - w // 2, y[-1])])
    return np.convolve(pad, k, mode="valid")


def _fig(title: str, ylabel: str):
    fig, ax = plt.subplots(figsize=(8, 3.4), dpi=110)
    ax.set_title(title, fontsize=11)
    ax.set_xlabel("time (min)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    return fig, ax


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def make_plots(results: list[ProfileResult], out: Path) -> list[tuple[str, Path]]:
    """Write the plots; returns (caption, path) pairs in the order a report shows them."""
    plots = []
    fig, ax = _fig("Hottest host CPU utilisation", "CPU utilisation")
    for r in results:
        ax.plot(r.series["time"] / 60, smooth(r.series["host_util_max"]), label=r.profile, lw=1.2)
    ax.axhline(1.0, color="gray", lw=0.6)
    ax.legend(fontsize=8)
    plots.append(("Hottest host's CPU utilisation over time, per profile.", _save(fig, out / "cpu_max.png")))

    first = results[0]
    for prefix, what, fname in (("cpu:", "CPU", "cpu_hosts.png"), ("nic_tx:", "NIC transmit", "nic_hosts.png")):
        host_cols = [k for k in first.series if k.startswith(prefix)]
        if not host_cols:
            continue
        fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.4), dpi=110, squeeze=False)
        for ax, r in zip(axes[0], results, strict=True):
            for k in host_cols:
                ax.plot(r.series["time"] / 60, smooth(r.series[k]), lw=0.9, label=k[len(prefix) :])
            for m in r.migrations:
                ax.axvline(m.started / 60, color="red", lw=0.6, alpha=0.6)
            ax.set_title(f"{r.profile}: {what} per host (red: migrations)", fontsize=10)
            ax.set_xlabel("time (min)")
            ax.set_ylim(0, 1.05)
            ax.grid(alpha=0.3)
        if len(host_cols) <= 12:
            axes[0][0].legend(fontsize=7, ncol=2)
        plots.append((f"{what} utilisation of every host, with migration starts.", _save(fig, out / fname)))

    if "response_time_mean" in first.series:
        fig, ax = _fig("Mean response time of web requests", "response time (ms)")
        for r in results:
            ax.plot(r.series["time"] / 60, smooth(r.series["response_time_mean"]) * 1e3, label=r.profile, lw=1.0)
        ax.set_yscale("log")
        ax.legend(fontsize=8)
        plots.append(
            (
                "Mean response time of all web requests served in each step.",
                _save(fig, out / "response_time.png"),
            )
        )

    fig, ax = _fig("Network: most utilised NIC and fabric link", "utilisation")
    for r in results:
        line = ax.plot(r.series["time"] / 60, smooth(r.series["nic_tx_util_max"]), label=f"{r.profile} NIC tx", lw=1.0)
        ax.plot(
            r.series["time"] / 60,
            smooth(r.series["link_util_max"]),
            ls="--",
            color=line[0].get_color(),
            lw=0.8,
            label=f"{r.profile} link",
        )
    ax.legend(fontsize=8)
    plots.append(("The most utilised NIC (solid) and fabric link (dashed).", _save(fig, out / "network.png")))

    fig, ax = _fig("Cluster power", "power (W)")
    for r in results:
        ax.plot(r.series["time"] / 60, smooth(r.series["power_w"]), label=r.profile, lw=1.0)
    ax.legend(fontsize=8)
    plots.append(("Power of all hosts (linear model).", _save(fig, out / "power.png")))

    for r in results:
        f = r.summary.get("intensity")
        if not f:
            continue
        names = list(f)
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), dpi=110)
        for ax, key, scale in ((axes[0], "IF", "log"), (axes[1], "NF", "linear")):
            ax.bar(range(len(names)), [max(f[n][key], 1e-3) for n in names], color="tab:blue")
            ax.set_xticks(range(len(names)), names, rotation=60, fontsize=7)
            ax.set_yscale(scale)
            ax.set_title(f"{r.profile}: {key} per VM over the run", fontsize=10)
            ax.grid(alpha=0.3, axis="y")
        plots.append(
            (
                f"{r.profile}: I/O factor (IF, log scale) and network factor (NF) of each VM.",
                _save(fig, out / f"intensity-{r.profile}.png"),
            )
        )
        break

    if any(r.vf_events for r in results):
        fig, ax = plt.subplots(figsize=(8, 3.4), dpi=110)
        vms = sorted(
            {e[1] for r in results for e in r.vf_events} | {v for r in results for v in r.initial_vfs},
            key=lambda n: (len(n), n),
        )
        end = max(r.series["time"][-1] for r in results)
        for k, r in enumerate(r for r in results if r.vf_events or r.initial_vfs):
            for row, vm in enumerate(vms):
                start = 0.0 if vm in r.initial_vfs else None
                for when, name, _, event in r.vf_events:
                    if name != vm:
                        continue
                    if event == "attached":
                        start = when
                    elif start is not None:
                        ax.plot(
                            [start / 60, when / 60], [row + 0.15 * k] * 2, lw=5, color=f"C{k}", solid_capstyle="butt"
                        )
                        start = None
                if start is not None:
                    ax.plot(
                        [start / 60, end / 60],
                        [row + 0.15 * k] * 2,
                        lw=5,
                        color=f"C{k}",
                        solid_capstyle="butt",
                        label=r.profile if row == 0 else None,
                    )
        ax.set_yticks(range(len(vms)), vms, fontsize=8)
        ax.set_xlabel("time (min)")
        ax.set_title("Who holds an SR-IOV VF", fontsize=11)
        ax.grid(alpha=0.3, axis="x")
        plots.append(("Bars show when each VM held a VF.", _save(fig, out / "vf_holders.png")))

    svc = [r for r in results if r.services]
    if svc:
        fig, ax = plt.subplots(figsize=(8, 3.4), dpi=110)
        n = len(svc[0].services)
        width = 0.8 / len(svc)
        for i, r in enumerate(svc):
            x = np.arange(n) + i * width
            ax.bar(x, [s["response_mean"] * 1e3 for s in r.services], width, label=f"{r.profile} mean")
            ax.scatter(x, [s["response_p95"] * 1e3 for s in r.services], marker="_", s=80, color="black")
        ax.set_xticks(np.arange(n) + 0.4 - width / 2, [s["server"] for s in svc[0].services], rotation=45, fontsize=7)
        ax.set_ylabel("response time (ms); tick: p95")
        ax.set_title("Response time per web service", fontsize=11)
        ax.legend(fontsize=8)
        plots.append(
            (
                "Mean (bars) and 95th percentile (ticks) response time per service.",
                _save(fig, out / "services.png"),
            )
        )
    return plots
