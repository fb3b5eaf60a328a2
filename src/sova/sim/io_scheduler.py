"""A storage server's tag scheduler, as mClock (Gulati et al., OSDI 2010) and Ceph's dmclock share a device,
in its fluid form: what each stream is served when the scheduler has run long enough for its tags to
settle. DRR (as Pisces uses it) is the same sharing with weights on bytes instead of requests.

Each VM has a reservation r (requests/s), a weight w and a limit (the VM's limiter, applied before the
device). A request costs the device its service time. Per server, with every stream's demand d already
within its limit:

- the reservations fit (Σ cost * min(d, r) <= 1): each stream gets min(d, max(r, θ w)), θ the level at
  which the device is full. The reservation phase tops a VM up to r; the weight phase shares the rest,
  and what a VM got there counts toward its reservation (dmclock lowers its R tags), so a VM whose
  weighted share is above its reservation gets its share, not both;
- they do not fit: the R tags of every backlogged VM fall behind the clock, the smallest R tag is always
  served next, so each VM gets the same fraction of its reservation, min(d, φ r), and the weight phase
  never runs (a VM with no reservation gets nothing).

A VM's reservation and weight are split among its streams in proportion to their demand (its requests
are served in arrival order from one queue). tests/test_io_scheduler.py checks this against a
request-by-request tag scheduler.
"""

from __future__ import annotations

import numpy as np

from sova.sim.compute import weighted_share

BISECTIONS = 60  # halvings of θ's bracket: below a double's resolution of the level


def tagged_share(
    server: np.ndarray, demand: np.ndarray, cost: np.ndarray, reservation: np.ndarray, weight: np.ndarray, n: int
) -> np.ndarray:
    """Requests/s served per stream. server: index per stream; demand: requests/s each stream offers;
    cost: device time per request (seconds of the whole device); reservation (requests/s) and weight
    per stream; n: servers. Each server's device time per second is 1."""
    served = np.zeros(len(demand))
    if not len(demand):
        return served
    floor = np.minimum(demand, reservation)
    reserved = np.bincount(server, weights=floor * cost, minlength=n)
    over = (reserved > 1.0)[server]
    if over.any():  # every R tag behind: shared in proportion to the reservations
        time = weighted_share(server[over], (demand * cost)[over], (reservation * cost)[over], np.ones(n))
        served[over] = time / cost[over]
    fits = ~over
    if fits.any():
        served[fits] = _weighted_above_floor(server[fits], demand[fits], cost[fits], floor[fits], weight[fits], n)
    return served


def _weighted_above_floor(
    server: np.ndarray, demand: np.ndarray, cost: np.ndarray, floor: np.ndarray, weight: np.ndarray, n: int
) -> np.ndarray:
    """min(d, max(floor, θ w)) per stream, θ per server the level that fills its device (or the level at
    which every stream has its demand, if the device has room for all)."""

    def used(level: np.ndarray) -> np.ndarray:
        got = np.minimum(demand, np.maximum(floor, level[server] * weight))
        return np.bincount(server, weights=got * cost, minlength=n)

    weighted = weight > 0
    top = np.zeros(n)
    np.maximum.at(top, server[weighted], demand[weighted] / weight[weighted])
    low, high = np.zeros(n), top
    full = used(high) > 1.0  # servers whose device fills before every stream has its demand
    for _ in range(BISECTIONS):
        mid = (low + high) / 2
        above = used(mid) > 1.0
        high = np.where(full & above, mid, high)
        low = np.where(full & ~above, mid, low)
    level = np.where(full, low, high)  # low never overfills the device
    return np.minimum(demand, np.maximum(floor, level[server] * weight))
