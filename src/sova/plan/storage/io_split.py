"""SASLO's IO split controller (§3.3.3, §4.2), vectorized over VMs: when a VM's mean IO latency rose by
more than `allowed` over the last two epochs (latinc(k) = (lat(k) - lat(k-1)) / lat(k-1)), its request-merge
limit shrinks to mm(k+1) = mm(k) / (1 + α(k)), α(k) = target / measured throughput, if that stays at or
above the lower bound of the VM's IO size range; once the latency is back within range and the PI
controller's integral term is (near) zero, the limit rolls back to mm(k-1) where that is larger (the
paper rolls back "for a larger IO size"; going back to a smaller one would undo the roll-back). The limit
never exceeds `highest`, the IO size limit the optimizer (AOT) set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class SplitState:
    """Per VM: the request-merge limit now and one epoch ago (bytes), and the last epoch's latency."""

    limit: np.ndarray
    previous_limit: np.ndarray
    last_latency: np.ndarray  # NaN before the first epoch

    @classmethod
    def fresh(cls, limit: np.ndarray) -> SplitState:
        limit = np.asarray(limit, dtype=float)
        return cls(limit.copy(), limit.copy(), np.full(len(limit), np.nan))


def latency_increase(latency: np.ndarray, last: np.ndarray) -> np.ndarray:
    """latinc(k) per VM; 0 where either epoch has no latency."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rise = (latency - last) / last
    return np.where(np.isfinite(rise), rise, 0.0)


def step(
    state: SplitState,
    latency: np.ndarray,
    throughput: np.ndarray,
    target: np.ndarray,
    integral: np.ndarray,
    lowest: np.ndarray,
    highest: np.ndarray,
    allowed: float = 0.3,
    integral_zero: float = 0.01,
) -> np.ndarray:
    """One epoch: the request-merge limit (bytes) for the next. `integral` is the PI controller's u_I,
    "zero" when below `integral_zero` of the target in magnitude; `lowest` is each VM's lower bound of
    its IO size limit range, `highest` the IO size limit S_SLO."""
    rise = latency_increase(latency, state.last_latency)
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = np.where(throughput > 0, target / throughput, np.nan)
        shrunk = state.limit / (1.0 + alpha)
    split = (rise > allowed) & np.isfinite(shrunk) & (shrunk >= lowest)
    settled = (rise <= allowed) & (np.abs(integral) <= integral_zero * np.abs(target))
    rolled_back = np.maximum(state.previous_limit, state.limit)
    new = np.minimum(np.where(split, shrunk, np.where(settled, rolled_back, state.limit)), highest)
    state.previous_limit = state.limit
    state.limit = new
    state.last_latency = np.asarray(latency, dtype=float).copy()
    return new
