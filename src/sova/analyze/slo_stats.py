"""SLO statistics of the SASLO paper (§3.1): performance error (Eq. 1), SLO compliance rate (Eq. 2),
performance fluctuation ratio (Eq. 3) and the absolute value of the performance error (AVPE).

All take samples along the last axis (one row per VM), so one call scores every VM of a run. A target of
0 or a row with no samples has no defined value: it gives NaN, never a division error.
"""

from __future__ import annotations

import numpy as np

DELTA_DEFAULT = 10.0  # δ1 = δ2 = 10 %: the paper's allowable range of the performance error


def _per_row(target: np.ndarray | float, ndim: int) -> np.ndarray:
    """The target as a column that broadcasts against samples (rows x samples); 0 becomes NaN."""
    target = np.asarray(target, dtype=float)
    target = np.where(target > 0, target, np.nan)
    return target.reshape(target.shape + (1,) * (ndim - target.ndim)) if target.ndim < ndim else target


def performance_error(actual: np.ndarray, target: np.ndarray | float) -> np.ndarray:
    """Eq. 1: E = 100 (P_actual - P_SLO) / P_SLO, in per cent, per sample."""
    actual = np.asarray(actual, dtype=float)
    with np.errstate(invalid="ignore"):
        return 100.0 * (actual - _per_row(target, actual.ndim)) / _per_row(target, actual.ndim)


def sc_rate(
    actual: np.ndarray, target: np.ndarray | float, low: float = DELTA_DEFAULT, high: float = DELTA_DEFAULT
) -> np.ndarray:
    """Eq. 2: the share (per cent) of the samples whose error lies in [-low %, +high %]; a NaN sample (a
    missing measurement) counts neither way."""
    error = performance_error(actual, target)
    known = ~np.isnan(error)
    inside = known & (error >= -low) & (error <= high)
    n = known.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, 100.0 * inside.sum(axis=-1) / n, np.nan)


def pf_ratio(actual: np.ndarray, target: np.ndarray | float) -> np.ndarray:
    """Eq. 3: 100 SD(P_actual) / P_SLO, the population standard deviation of the samples."""
    actual = np.asarray(actual, dtype=float)
    if actual.shape[-1] == 0:
        return np.full(actual.shape[:-1], np.nan)
    return 100.0 * actual.std(axis=-1) / _per_row(target, actual.ndim)[..., 0]


def avpe(actual: np.ndarray, target: np.ndarray | float) -> np.ndarray:
    """|E| of the mean performance over the samples (the paper's AVPE, "near zero" when enforced)."""
    actual = np.asarray(actual, dtype=float)
    if actual.shape[-1] == 0:
        return np.full(actual.shape[:-1], np.nan)
    return np.abs(performance_error(actual.mean(axis=-1, keepdims=True), target))[..., 0]
