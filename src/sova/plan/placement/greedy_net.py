"""Greedy Net (Virtue §III-D2): with the traffic matrix and the topology but no CPU data, repeatedly find
the most utilized link and move a VM sending traffic across it (the paper: "moves VMs sending traffic
across this link") to the host that lowers the maximum link utilization most; stop when no such move
lowers it (or after ``max_moves``). Measured on a congested
network many links sit at the same (saturated) maximum, and no single move lowers the maximum itself:
then a move that keeps the maximum and leaves fewer links at it counts as lowering it (the hottest link
drops below it), so the algorithm works through the tied links one by one.

A group's links carry the traffic between its VMs and everything outside it. The candidates are the VMs
that send across the link in its busier direction, heaviest first: the group's own VMs when its uplink
is the busier, the VMs outside sending into the group when its downlink is (the pages a client receives
come from web VMs elsewhere, and only moving one of those lowers that link).
"""

from __future__ import annotations

import numpy as np

from sova.plan.placement.minimax import Evaluator
from sova.plan.placement.problem import PlacementProblem

IMPROVEMENT = 1e-9
TIE = 1e-6  # links within this (relative) of the maximum are at it
TIE_TRIES = 4  # hosts tried for a move that keeps the maximum but lowers the number of links at it


def greedy_net(problem: PlacementProblem, x0: np.ndarray, max_moves: int = 10_000) -> np.ndarray:
    problem.check()
    ev = Evaluator(problem, "links", x0)
    cap = problem.capacity()
    count = np.bincount(ev.x, minlength=problem.n_hosts)
    mem = problem.memory if problem.memory is not None and problem.host_memory is not None else None
    mem_used = np.bincount(ev.x, weights=mem, minlength=problem.n_hosts) if mem is not None else None
    hosts = np.arange(problem.n_hosts)
    for _ in range(max_moves):
        current = ev.value()
        if current <= 0:
            break
        at_max = _at_max(ev, current)
        lvl, g = _hottest_group(ev)
        moved = False
        for v in _senders(problem, ev, lvl, g):
            a = int(ev.x[v])
            ev.move(int(v), -1)
            s, local = ev.scores_and_local(int(v))
            room = count - (hosts == a) < cap
            if mem_used is not None:
                room &= mem_used - np.where(hosts == a, mem[v], 0) + mem[v] <= problem.host_memory
            s[~room | (hosts == a)] = np.inf
            allowed = problem.allowed(int(v), ev.x)
            if allowed is not None:
                s[~allowed] = np.inf
            h = int(np.argmin(s))
            if s[h] >= current - IMPROVEMENT:
                h = _fewer_at_max(ev, int(v), s, local, current, at_max)
            if h >= 0:
                ev.move(int(v), h)
                count[a] -= 1
                count[h] += 1
                if mem_used is not None:
                    mem_used[a] -= mem[v]
                    mem_used[h] += mem[v]
                moved = True
                break
            ev.move(int(v), a)
        if not moved:
            break
    return ev.x


def _at_max(ev: Evaluator, level: float) -> int:
    """How many links are at the maximum utilization `level`."""
    return sum(
        int((np.maximum(o, i) / c >= level * (1 - TIE)).sum()) for o, i, c in zip(ev.out, ev.inn, ev.caps, strict=True)
    )


def _fewer_at_max(ev: Evaluator, v: int, s: np.ndarray, local: np.ndarray, current: float, at_max: int) -> int:
    """A host for the unplaced VM v that keeps the maximum and leaves fewer links at it, or -1 (v unplaced)."""
    ok = np.flatnonzero(s <= current * (1 + TIE))
    for h in ok[np.argsort(local[ok], kind="stable")][:TIE_TRIES]:
        ev.move(v, int(h))
        if ev.value() <= current * (1 + TIE) and _at_max(ev, current) < at_max:
            ev.move(v, -1)
            return int(h)
        ev.move(v, -1)
    return -1


def _senders(problem: PlacementProblem, ev: Evaluator, lvl: int, g: int) -> np.ndarray:
    """The VMs sending across group g's link at level lvl in its busier direction, heaviest first."""
    inside = problem.levels.group[lvl][ev.x] == g
    if ev.out[lvl][g] >= ev.inn[lvl][g]:  # out of the group: its VMs' traffic to the rest and outside
        sent = problem.traffic @ (~inside).astype(float) + problem.external_tx
        sent[~inside] = 0.0
    else:  # into the group: the traffic of the VMs elsewhere to its VMs
        sent = problem.traffic @ inside.astype(float)
        sent[inside] = 0.0
    senders = np.flatnonzero(sent > 0)
    return senders[np.argsort(-sent[senders], kind="stable")]


def _hottest_group(ev: Evaluator) -> tuple[int, int]:
    best, where = -1.0, (0, 0)
    for lvl, (out, inn, cap) in enumerate(zip(ev.out, ev.inn, ev.caps, strict=True)):
        u = np.maximum(out, inn) / cap
        g = int(np.argmax(u))
        if u[g] > best:
            best, where = float(u[g]), (lvl, g)
    return where
