"""Greedy Fill (Virtue Algorithm 1): rip up the placement, then place the VMs one by one in ascending
order of network use, each on the host that minimizes the data center's maximum utilization with the
VMs placed so far. Among hosts that tie on it (common: the maximum is often set by a resource the VM
does not touch), the one whose own resources end up least utilized wins, and then the lowest-numbered
host ("left to right", as the paper breaks ties among otherwise identical PMs).

Every host is scored at once for each VM (``Evaluator.scores_if_placed``), so a VM costs a few numpy
passes over the hosts and groups instead of one objective evaluation per host.
"""

from __future__ import annotations

import numpy as np

from sova.plan.placement.minimax import Evaluator
from sova.plan.placement.problem import PlacementError, PlacementProblem


def greedy_fill(problem: PlacementProblem, energy: str = "all") -> np.ndarray:
    problem.check()
    V = problem.n_vms
    order = np.argsort(problem.nic_tx() + problem.nic_rx(), kind="stable")
    ev = Evaluator(problem, energy, np.full(V, -1))
    free = problem.capacity().astype(np.int64)
    mem_free = None if problem.memory is None or problem.host_memory is None else problem.host_memory.astype(float)
    for v in order:
        s, local = ev.scores_and_local(int(v))
        s[free <= 0] = np.inf
        if mem_free is not None:
            s[mem_free < problem.memory[v]] = np.inf
        allowed = problem.allowed(int(v), ev.x)
        if allowed is not None:
            s[~allowed] = np.inf
        tied = np.flatnonzero(s <= s.min() * (1 + 1e-9) + 1e-12)
        h = int(tied[np.argmin(local[tied])])  # argmin takes the first: the lowest-numbered among equals
        if not np.isfinite(s[h]):
            raise PlacementError(f"no host has a slot and memory left for VM {problem.vm_names[v]} within its rules")
        ev.move(int(v), h)
        free[h] -= 1
        if mem_free is not None:
            mem_free[h] -= problem.memory[v]
    return ev.x
