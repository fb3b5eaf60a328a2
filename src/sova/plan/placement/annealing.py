"""Simulated annealing over placements (Virtue §III-D1): SA C, SA CN, SA CNTM and SA All are this search
with the energies ``cpu``, ``nic``, ``nic-tm`` and ``all`` of ``minimax``.

A step moves one random VM to a random host with room, or swaps it with a random VM of a full host (so
slot and memory limits always hold); it is kept if it does not raise the energy, else with probability
exp(-increase / T). T cools geometrically from ``t0`` to ``t_end`` over ``steps``; the best placement
seen is returned. The paper gives no schedule; these defaults are stated in docs/placement.md.
"""

from __future__ import annotations

import math

import numpy as np

from sova.plan.placement.minimax import Evaluator
from sova.plan.placement.problem import PlacementProblem


def anneal(
    problem: PlacementProblem,
    x0: np.ndarray,
    energy: str,
    rng: np.random.Generator,
    steps: int = 20_000,
    t0: float = 0.05,
    t_end: float = 1e-4,
) -> np.ndarray:
    problem.check()
    ev = Evaluator(problem, energy, x0)
    V, H = problem.n_vms, problem.n_hosts
    cap = problem.capacity()
    count = np.bincount(ev.x, minlength=H)
    mem = problem.memory if problem.memory is not None and problem.host_memory is not None else None
    mem_used = np.bincount(ev.x, weights=mem, minlength=H) if mem is not None else None
    current = ev.value()
    best, best_x = current, ev.x.copy()
    cool = (t_end / t0) ** (1.0 / max(steps - 1, 1))
    temp = t0
    vms, hosts, coins = rng.integers(0, V, steps), rng.integers(0, H, steps), rng.random(steps)
    for k in range(steps):
        v, h = int(vms[k]), int(hosts[k])
        a = int(ev.x[v])
        if h == a:
            temp *= cool
            continue
        swap = -1
        if count[h] >= cap[h] or (mem_used is not None and mem_used[h] + mem[v] > problem.host_memory[h]):
            on_h = np.flatnonzero(ev.x == h)
            swap = int(on_h[rng.integers(len(on_h))]) if len(on_h) else -1
            if swap < 0 or (
                mem_used is not None
                and (
                    mem_used[h] - mem[swap] + mem[v] > problem.host_memory[h]
                    or mem_used[a] - mem[v] + mem[swap] > problem.host_memory[a]
                )
            ):
                temp *= cool
                continue
        _apply(ev, v, h, swap, a)
        if problem.rules is not None and (problem.breaks(v, ev.x) or (swap >= 0 and problem.breaks(swap, ev.x))):
            _apply(ev, v, a, swap, h)  # a must rule forbids it
            temp *= cool
            continue
        value = ev.value()
        if value <= current or coins[k] < math.exp(-(value - current) / temp):
            current = value
            if swap < 0:
                count[a] -= 1
                count[h] += 1
                if mem_used is not None:
                    mem_used[a] -= mem[v]
                    mem_used[h] += mem[v]
            elif mem_used is not None:
                mem_used[a] += mem[swap] - mem[v]
                mem_used[h] += mem[v] - mem[swap]
            if current < best - 1e-12:
                best, best_x = current, ev.x.copy()
        else:
            _apply(ev, v, a, swap, h)  # undo
        temp *= cool
    return best_x


def _apply(ev: Evaluator, v: int, to: int, swap: int, frm: int) -> None:
    ev.move(v, to)
    if swap >= 0:
        ev.move(swap, frm)
