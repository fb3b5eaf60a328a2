"""SASLO's IO rate limiter (Eq. 4): one time stamp per request, T_q = max(T_(q-1) + 1/rate, arrival_q),
and a request is dispatched once the clock reaches its stamp, so a backlogged VM gets `rate` requests a
second and an idle one cannot save up credit beyond its next arrival (mClock's limit tag alone).

The simulator, a fluid model, applies the same rule per epoch (sim/storage_epochs.py); this form stamps
single requests, as a hypervisor's IO scheduler does.

The recurrence unrolls to T_q = q/rate + max(T_prev + 1/rate, max_(j<=q) (arrival_j - j/rate)), a
running maximum, so a whole epoch's requests are stamped at once.
"""

from __future__ import annotations

import numpy as np


def stamps(arrivals: np.ndarray, rate: float, previous: float = -np.inf) -> np.ndarray:
    """The time stamps of one VM's requests, given their arrival times (sorted) and the stamp of the
    request before them (-inf: none yet). rate is in requests per second (> 0; inf: no limit)."""
    arrivals = np.asarray(arrivals, dtype=float)
    if not rate > 0:
        raise ValueError(f"rate limiter: rate must be > 0 requests/s, got {rate}")
    if len(arrivals) and np.any(np.diff(arrivals) < 0):
        raise ValueError("rate limiter: arrival times must be sorted")
    gap = 0.0 if np.isinf(rate) else 1.0 / rate
    order = np.arange(len(arrivals)) * gap
    earliest = np.maximum.accumulate(arrivals - order) if len(arrivals) else arrivals
    return order + np.maximum(previous + gap, earliest)


def dispatched(arrivals: np.ndarray, rate: float, until: float, previous: float = -np.inf) -> tuple[int, float]:
    """(how many of the requests are dispatched by time `until`, the stamp of the last one dispatched or
    `previous` when none is): one epoch of the limiter."""
    stamped = stamps(arrivals, rate, previous)
    n = int(np.searchsorted(stamped, until, side="right"))
    return n, float(stamped[n - 1]) if n else previous
