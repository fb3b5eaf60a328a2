"""Sova's Autonomic Manager, Algorithm 2: hotspot detection and the migration signal.

For each host, volume_p is its load in each report: the largest utilisation of its resources (CPU,
NIC, memory), which is what §3.4.2 and §5.2 compare with the threshold alpha ("when the overall
workload of the physical server exceeds a certain threshold"; "one or more resource usage exceeds
alpha"). A host is hot when at least k of its last n values exceed alpha and the AR(1) forecast of the
next one does too (lines 4-6: ``analyze.hotspot``, whose ``hotspot`` findings the ``dsriov-vlm`` policy reads).
Its destination is the least loaded host not already chosen as a destination in this round
(getMinNotInDestination, line 7), and only if that host is below alpha and is not the hot host itself
(line 8). Hot hosts are served hottest first; each gets at most one destination per round. Only reports
taken since a host's VMs last changed count towards its k: the round after a migration must not act on
reports of the host as it was before. Optionally (the `dsriov-vlm` policy's host_cooldown, off by default as
the paper has none) a host that just received a VM sends none and one that just sent a VM receives none
for a while: saturated hosts otherwise trade VMs back and forth (29 migrations in 30 minutes in Sova
§5.4 at 1,400 req/s). (The paper's Eq. 5 "volume" is a skewness and is used where the paper uses it:
the Effector's MF.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sova.analyze.hotspot import volume_rule
from sova.model.schema import Field

# shared by the policies that detect hotspots from reports (sova, vlm), which declare HOTSPOT_ORDER
HOTSPOT_ORDER = (("k", "n"),)
HOTSPOT_PARAMS = {
    "interval": Field("duration", 10.0, "length of one report (observation)", lo=0, lo_open=True),
    "k": Field("int", 3, "reports above the threshold needed (the Sova paper: 3 of 5)", lo=1),
    "n": Field("int", 5, "reports considered", lo=1),
    "min_residence": Field("duration", 600.0, "a VM that just moved is not chosen again for this long", lo=0),
}


@dataclass(frozen=True)
class Signal:
    """migration[Host_i] = <True, Host_j>, with the evidence for the audit log."""

    host: int
    destination: int
    above: int  # reports above alpha among the last n
    forecast: float
    load: float


def destinations(
    hot: np.ndarray,
    load: np.ndarray,
    alpha: float,
    not_source: np.ndarray | None = None,
    not_destination: np.ndarray | None = None,
) -> list[tuple[int, int]]:
    """(hot host, destination) pairs, hottest host first, from each host's verdict and load in the last
    report; not_source / not_destination: hosts that may not send or receive a VM now (they just
    received or sent one)."""
    order_key = load if not_destination is None else np.where(not_destination, np.inf, load)
    coldest = np.lexsort((np.arange(len(load)), order_key))  # getMinNotInDestination walks this order
    senders = hot if not_source is None else hot & ~not_source
    cursor = 0
    pairs = []
    for h in np.flatnonzero(senders)[np.argsort(-load[senders], kind="stable")]:
        while cursor < len(coldest) and coldest[cursor] == h:
            cursor += 1
        if cursor == len(coldest):
            break
        j = int(coldest[cursor])
        if load[j] < alpha and not hot[j] and not (not_destination is not None and not_destination[j]):
            cursor += 1
            pairs.append((int(h), j))
    return pairs


def migration_signals(
    loads: np.ndarray,
    k: int,
    alpha: float,
    rng: np.random.Generator | None = None,
    valid: np.ndarray | None = None,
    not_source: np.ndarray | None = None,
    not_destination: np.ndarray | None = None,
) -> tuple[list[Signal], np.ndarray]:
    """Algorithm 2 on loads (n reports x hosts x resources); valid (n x hosts): reports that count (those
    taken since the host's VMs last changed). Returns the signals and the per-host hot flags."""
    found = volume_rule(loads, k, alpha, valid, rng)
    pairs = destinations(found.hot, found.load, alpha, not_source, not_destination)
    signals = [Signal(h, j, int(found.above[h]), float(found.forecast[h]), float(found.load[h])) for h, j in pairs]
    return signals, found.hot
