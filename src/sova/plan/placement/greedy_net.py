"""Greedy Net (Virtue §III-D2): with the traffic matrix and the topology but no CPU data, repeatedly find
the most utilized link and move a VM whose traffic crosses it to the host that lowers the maximum link
utilization most; stop when no such move lowers it (or after ``max_moves``).

A group's links carry the traffic between its VMs and everything outside it; the candidates are the
group's VMs with traffic across its boundary, heaviest first.
"""

from __future__ import annotations

import numpy as np

from sova.plan.placement.minimax import Evaluator
from sova.plan.placement.problem import Problem

IMPROVEMENT = 1e-9


def greedy_net(problem: Problem, x0: np.ndarray, max_moves: int = 10_000) -> np.ndarray:
    problem.check()
    ev = Evaluator(problem, "links", x0)
    cap = problem.capacity()
    count = np.bincount(ev.x, minlength=problem.n_hosts)
    mem = problem.memory if problem.memory is not None and problem.host_memory is not None else None
    mem_used = np.bincount(ev.x, weights=mem, minlength=problem.n_hosts) if mem is not None else None
    t = problem.traffic
    tx = np.asarray(t.sum(axis=1)).ravel() + problem.external_tx
    rx = np.asarray(t.sum(axis=0)).ravel() + problem.external_rx
    for _ in range(max_moves):
        current = ev.value()
        if current <= 0:
            break
        lvl, g = _hottest_group(ev)
        members = np.flatnonzero(problem.levels.group[lvl][ev.x] == g)
        moved = False
        for v in members[np.argsort(-(tx[members] + rx[members]), kind="stable")]:
            a = int(ev.x[v])
            ev.move(int(v), -1)
            s = ev.scores_if_placed(int(v))
            room = count - (np.arange(len(count)) == a) < cap
            if mem_used is not None:
                room &= mem_used - np.where(np.arange(len(count)) == a, mem[v], 0) + mem[v] <= problem.host_memory
            s[~room] = np.inf
            s[a] = np.inf
            h = int(np.argmin(s))
            if s[h] < current - IMPROVEMENT:
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


def _hottest_group(ev: Evaluator) -> tuple[int, int]:
    best, where = -1.0, (0, 0)
    for lvl, (out, inn, cap) in enumerate(zip(ev.out, ev.inn, ev.caps, strict=True)):
        u = np.maximum(out, inn) / cap
        g = int(np.argmax(u))
        if u[g] > best:
            best, where = float(u[g]), (lvl, g)
    return where
