"""Random placement (Virtue §III-B): each VM on a host drawn at random; a full host (slots or memory)
is drawn again. The paper's baseline, and what a fragmented static placement looks like. Under placement
rules each VM is drawn among the hosts its must rules allow given the VMs drawn before it; an order that
leaves a VM no such host is drawn again (up to RULE_TRIES orders)."""

from __future__ import annotations

import numpy as np

from sova.plan.placement.problem import PlacementError, PlacementProblem

RULE_TRIES = 64


def random_placement(problem: PlacementProblem, rng: np.random.Generator) -> np.ndarray:
    problem.check()
    for _ in range(RULE_TRIES - 1 if problem.rules is not None else 0):
        try:
            return _draw(problem, rng)
        except PlacementError:
            continue
    return _draw(problem, rng)


def _draw(problem: PlacementProblem, rng: np.random.Generator) -> np.ndarray:
    free = problem.capacity().astype(np.int64)
    mem_free = None if problem.memory is None or problem.host_memory is None else problem.host_memory.astype(float)
    x = np.full(problem.n_vms, -1, dtype=np.int64)
    H = problem.n_hosts
    for v in rng.permutation(problem.n_vms):
        allowed = problem.allowed(int(v), x)
        for _ in range(32 if allowed is None else 0):  # draw again while the host is full, as the paper does
            h = int(rng.integers(H))
            if free[h] > 0 and (mem_free is None or mem_free[h] >= problem.memory[v]):
                break
        else:  # mostly full, or bound by rules: draw among the hosts with room it may use
            room = free > 0 if allowed is None else (free > 0) & allowed
            if mem_free is not None:
                room &= mem_free >= problem.memory[v]
            hosts = np.flatnonzero(room)
            if len(hosts) == 0:
                raise PlacementError(f"no host has a slot and memory left for VM {problem.vm_names[v]}")
            h = int(rng.choice(hosts))
        x[v] = h
        free[h] -= 1
        if mem_free is not None:
            mem_free[h] -= problem.memory[v]
    return x
