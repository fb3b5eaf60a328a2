"""The conventions every plot of a report follows, so that each reads alike without its caption.

- Every panel has a y-axis label; a figure with several panels has one legend for all of them, below them.
- Migration starts are black dashed lines ("migration start"), a colour no host or profile line uses.
- A time series of 1 s samples that swings faster than a pixel would draw as a solid band: it is drawn as a
  smoothed line (a triangular moving average over about 2 % of the run) over its raw samples, faint.
- Axes are linear; a log axis only where the values span more than LOG_SPAN (two decades), and then its label
  says "log scale".
- Long names (hosts, VMs, services) are cut with report.names.truncate.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D

MIGRATION_STYLE = {"color": "black", "ls": "--", "lw": 0.8, "alpha": 0.75}
MIGRATION_LABEL = "migration start"
DUTY_PERIOD_SAMPLES = 10  # the duty-cycle period at 1 s steps
SMOOTH_POINTS = 100  # a moving average over n / SMOOTH_POINTS samples, applied twice
BAND_FRACTION = 0.03  # raw samples straying this share of the line's range from the smoothed line look like a band
LOG_SPAN = 100.0  # largest / smallest positive value above which an axis is logarithmic


def smooth(values: np.ndarray, window: int) -> np.ndarray:
    """Triangular moving average (a `window`-sample box applied twice), ignoring NaN samples.

    Twice because one box leaves a ripple of periodic loads (a 10 s duty cycle under an 18 s box keeps
    10 % of its swing), while its square keeps about 1 %. Edges average over the samples there are.
    """
    y = np.asarray(values, dtype=float)
    if window <= 1 or len(y) < 3:
        return y
    for _ in range(2):
        valid = np.isfinite(y)
        box = np.ones(window)
        sums = np.convolve(np.where(valid, y, 0.0), box, mode="same")
        counts = np.convolve(valid.astype(float), box, mode="same")
        with np.errstate(invalid="ignore", divide="ignore"):
            y = np.where(counts > 0, sums / counts, np.nan)
    return y


def smoothing_window(samples: int) -> int:
    """About SMOOTH_POINTS independent values over the run, and at least the 10 s period of the papers' duty
    cycles (lookbusy, netperf) once a run is long enough to show it, so that their on/off swing averages out."""
    return max(1, samples // SMOOTH_POINTS, min(DUTY_PERIOD_SAMPLES, samples // 20))


def looks_like_band(raw: np.ndarray, smoothed: np.ndarray) -> bool:
    """Whether the raw samples stray visibly from the smoothed line (and so draw as a band)."""
    finite = np.isfinite(raw) & np.isfinite(smoothed)
    if finite.sum() < 3:
        return False
    spread = np.ptp(raw[finite])
    if spread == 0:
        return False
    return float(np.percentile(np.abs(raw[finite] - smoothed[finite]), 90)) > BAND_FRACTION * spread


def plot_series(ax, x: np.ndarray, y: np.ndarray, **style) -> Line2D:
    """y against x as a smoothed line, over the raw samples drawn faint where they would draw as a band."""
    smoothed = smooth(y, smoothing_window(len(y)))
    (line,) = ax.plot(x, smoothed, **{"lw": 1.3, **style})
    if looks_like_band(np.asarray(y, dtype=float), smoothed):
        ax.plot(x, y, color=line.get_color(), lw=0.5, alpha=0.22, zorder=line.get_zorder() - 1)
    return line


def needs_log_scale(values) -> bool:
    """Whether the positive finite values span more than LOG_SPAN, so that a linear axis would flatten most."""
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v) & (v > 0)]
    return len(v) > 1 and v.max() / v.min() > LOG_SPAN


def set_value_axis(ax, label: str, values) -> None:
    """Label the y axis, and make it logarithmic (saying so) only if the values need it."""
    if needs_log_scale(values):
        ax.set_yscale("log")
        label = f"{label}, log scale"
    ax.set_ylabel(label)


def mark_migrations(ax, starts_s) -> None:
    for start in starts_s:
        ax.axvline(start / 60, **MIGRATION_STYLE)


def migration_handle() -> Line2D:
    return Line2D([], [], label=MIGRATION_LABEL, **MIGRATION_STYLE)


def time_axis(ax) -> None:
    ax.set_xlabel("time (min)")
    ax.grid(alpha=0.3)


def figure_legend(fig, handles: list | None = None, max_columns: int = 6) -> None:
    """One legend for every panel, centred below them (the entries of all panels, each label once)."""
    if handles is None:
        seen: dict[str, object] = {}
        for ax in fig.axes:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                seen.setdefault(label, handle)
        handles = [h for label, h in seen.items() if not label.startswith("_")]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), max_columns), fontsize=8)


def figure(panels: int = 1, width: float = 8.0, height: float = 3.6):
    """A figure with `panels` side by side, laid out so that a figure legend fits below them."""
    fig, axes = plt.subplots(
        1, panels, figsize=(max(width, 4.2 * panels), height), dpi=110, squeeze=False, layout="constrained"
    )
    return fig, list(axes[0])


def save(fig, path: Path) -> Path:
    fig.savefig(path)
    plt.close(fig)
    return path
