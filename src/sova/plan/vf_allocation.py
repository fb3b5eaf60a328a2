"""Choosing which VMs of a host hold its VFs, and at which rate tier (shared by dsriov and sova).

Selection keeps the paper's queues: VMs judged network-intensive go to the priority queue (PQ) and
hold VFs; the rest stay in the general queue (GQ) on their vNIC. A VM that stops being intensive loses
its VF at once. A VF changes hands only when a newcomer is *clearly* more intensive than the weakest
holder: its network score exceeds the holder's by ``margin``, or the scores are within margin/2 and
its I/O score is ``io_ratio`` times the holder's (Sova §5.1: "VM4 ... aligns with VM3, but" is the purer
network VM). Equals never swap, so nothing flaps.

Rate tiers (SR-IOV paper Eq. 7): VF_n = VF_0 + (n - 1) * delta for n = 1..p with sum VF_n <= B. The
highest tiers go to the holders with the highest bandwidth demand (the Transmit Rate Scheduler).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Candidate(NamedTuple):  # a tuple: a decision round makes one per VM with traffic, 100,000 at scale
    vm: str
    net: float  # network score: NF or net_degree
    io: float  # I/O score: IF or io_degree
    demand: float  # bit/s sent + received over the window


def clearly_exceeds(new: Candidate, old: Candidate, margin: float, io_ratio: float) -> bool:
    """Whether `new` should take `old`'s VF. Scores count as equal within half the margin, so no pair
    can displace each other in turn: whoever won by I/O score is within margin/2, and whoever won by
    network score leads by more than the margin."""
    if new.net > old.net * (1 + margin) + 1e-12:
        return True
    tie = abs(new.net - old.net) <= 0.5 * margin * max(abs(old.net), abs(new.net))
    return tie and new.io > io_ratio * max(old.io, 1e-12)


def choose_holders(
    intensive: list[Candidate], holders: set[str], slots: int, margin: float, io_ratio: float
) -> list[Candidate]:
    """The VMs that should hold the host's `slots` VFs; `intensive` are the PQ candidates."""
    ranked = sorted(intensive, key=lambda c: (-c.net, -c.io, c.vm))
    keep = [c for c in ranked if c.vm in holders][:slots]
    others = [c for c in ranked if c.vm not in holders]
    taken = max(0, min(slots - len(keep), len(others)))  # free VFs go to the most intensive newcomers
    keep += others[:taken]
    weakest = min(keep, key=_strength, default=None)
    for new in others[taken:]:  # best newcomer first; each may displace the weakest holder
        if weakest is None or not clearly_exceeds(new, weakest, margin, io_ratio):
            continue
        keep.remove(weakest)
        keep.append(new)
        weakest = min(keep, key=_strength)
    return sorted(keep, key=lambda c: (-c.net, -c.io, c.vm))


def _strength(candidate: Candidate) -> tuple[float, float]:
    return candidate.net, candidate.io


def rate_tiers(slots: int, bandwidth: float, vf0: float, delta: float, demands: np.ndarray | None = None) -> np.ndarray:
    """Tier caps VF_1..VF_p (bit/s, ascending), VF_n = VF_0 + (n - 1) * delta with sum <= B.

    The paper sets delta "according to the size of the network difference between the VMs". Automatic
    values (0) do that from the holders' measured demands: the progression that covers every sorted
    demand (VF_n >= d_n) with the smallest total, then the rest of the port added evenly, so a tier binds
    only when the port is short. Given values are used as they are. Either way, tiers that would exceed
    B are scaled down together.
    """
    if slots <= 0:
        return np.zeros(0)
    # plain floats: a round computes this for every host, on a handful of values (numpy's call overhead
    # was most of the time); the arithmetic is numpy's, operation by operation, so the tiers are the same
    d = sorted(float(x) for x in demands) if demands is not None and len(demands) == slots else [0.0] * slots
    if delta <= 0:
        delta = _covering_step(d) if vf0 <= 0 else max(max((d[n] - vf0) / max(n, 1) for n in range(slots)), 0.0)
    if vf0 <= 0:
        vf0 = max(0.0, *(d[n] - n * delta for n in range(slots)))
        vf0 += max(bandwidth - (slots * vf0 + delta * slots * (slots - 1) / 2), 0.0) / slots
    tiers = [vf0 + n * delta for n in range(slots)]
    total = sum(tiers) if slots < 8 else float(np.sum(tiers))  # numpy sums 8 or more values pairwise
    return np.array([tier * (bandwidth / total) for tier in tiers] if total > bandwidth else tiers)


def _covering_step(d: list[float]) -> float:
    """The delta >= 0 minimising p * max_n(d_n - n delta) + delta p (p - 1) / 2 (convex, piecewise linear:
    the optimum is 0 or a slope between two demands; of equal costs, the smallest delta). Plain Python:
    p is a handful of VFs."""
    p = len(d)
    if p < 2:
        return 0.0
    slopes = {(d[j] - d[i]) / (j - i) for i in range(p) for j in range(i + 1, p)}
    best, best_cost = 0.0, float("inf")
    for step in sorted({0.0} | {slope for slope in slopes if slope > 0}):  # ascending: ties keep the smaller
        cost = p * max([demand - n * step for n, demand in enumerate(d)]) + step * p * (p - 1) / 2
        if cost < best_cost - 1e-9:
            best, best_cost = step, cost
    return best


def assign_tiers(
    holders: list[Candidate], tiers: np.ndarray, current: dict[str, float] | None = None, margin: float = 0.0
) -> dict[str, float]:
    """Highest tiers to the highest demand. Holders keep their order by current tier unless a VM's
    demand exceeds a higher-tier VM's by `margin` (newcomers rank by demand alone)."""
    current = current or {}
    order = sorted(holders, key=lambda c: (-current.get(c.vm, -1.0), -c.demand, c.vm))
    changed = True
    while changed:  # bubble up clearly larger demands; equals never swap
        changed = False
        for i in range(len(order) - 1):
            hi, lo = order[i], order[i + 1]
            if lo.demand > hi.demand * (1 + margin) + 1e-9:
                order[i], order[i + 1] = lo, hi
                changed = True
    top = tiers[::-1]
    return {c.vm: float(top[i]) for i, c in enumerate(order)}
