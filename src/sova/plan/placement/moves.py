"""From the current placement to a target one, a wave of migrations at a time.

A wave holds only moves that can run together: each into a host that has a slot and the memory for it
(counting the moves of the wave), at most one move into and one out of any host. When the remaining
moves wait on each other (every destination full: a cycle of swaps), one VM of the cycle is parked on a
host with room; the next wave goes on from there.
"""

from __future__ import annotations

import numpy as np

from sova.plan.placement.problem import PlacementProblem


def next_wave(problem: PlacementProblem, current: np.ndarray, target: np.ndarray) -> list[tuple[int, int]]:
    """[(vm, host)] to start now; [] when the target is reached or no move is possible."""
    cap = problem.capacity()
    count = np.bincount(current, minlength=problem.n_hosts)
    mem = problem.memory if problem.memory is not None and problem.host_memory is not None else None
    used = np.bincount(current, weights=mem, minlength=problem.n_hosts) if mem is not None else None
    pending = np.flatnonzero(current != target)
    touched: set[int] = set()
    wave: list[tuple[int, int]] = []

    def fits(v: int, h: int) -> bool:
        if count[h] >= cap[h] or h in touched or int(current[v]) in touched:
            return False
        return used is None or used[h] + mem[v] <= problem.host_memory[h]

    def take(v: int, h: int) -> None:
        wave.append((v, h))
        touched.update((h, int(current[v])))
        count[h] += 1
        if used is not None:
            used[h] += mem[v]

    for v in pending:
        if fits(int(v), int(target[v])):
            take(int(v), int(target[v]))
    if not wave and len(pending):
        v = int(pending[0])  # a cycle: park one VM where there is room, off its source and its target
        for h in range(problem.n_hosts):
            if h not in (int(current[v]), int(target[v])) and fits(v, h):
                take(v, h)
                break
    return wave
