"""Moving VMs off a host as a group, within the placement rules and the room left: the destination of
``keep-rules`` (a drain) and ``ha-restart`` (a failed host) alike.
"""

from __future__ import annotations

import numpy as np

from sova.model.knowledge import Knowledge
from sova.model.placement_rules import BoundRules
from sova.model.snapshot import Snapshot

LOAD_WINDOW = 10.0


def group_of(bound: BoundRules, v: int, placement: np.ndarray) -> np.ndarray:
    """`v` and the VMs that must-affinity rules bind to it (chained) on its host."""
    group, todo = {v}, [v]
    while todo:
        member = todo.pop()
        for r in bound.of_vm.get(member, []):
            rule = bound.rules[r]
            if rule.must and rule.kind == "affinity":
                mates = bound.members[r][placement[bound.members[r]] == placement[v]]
                todo += [int(m) for m in mates if int(m) not in group]
                group.update(int(m) for m in mates)
    return np.array(sorted(group), dtype=np.int64)


def destination(
    bound: BoundRules, snap: Snapshot, group: np.ndarray, placement: np.ndarray, room: Room, cpu_limit: float
) -> int | None:
    """The host for `group` (VMs on one host, moving together): on, with the memory for them and their CPU
    under `cpu_limit`, where each keeps its must rules (and should rules, if some such host keeps them all);
    the least loaded such host, or None."""
    src = int(placement[group[0]])
    without = placement.copy()
    without[group] = -1
    fits = room.fits(group, cpu_limit) & snap.hosts_on()
    fits[src] = False
    must, every = fits.copy(), fits.copy()  # every: the hosts that keep all their rules, must ones included
    for member in group:
        name = snap.vms[member]
        must &= bound.allowed(name, without)
        every &= bound.allowed(name, without, must_only=False)
    ok = every if every.any() else must
    if not ok.any():
        return None
    candidates = np.flatnonzero(ok)
    return int(candidates[np.argmin(room.util[candidates])])


class Room:
    """Memory free and CPU load per host, as the plan so far leaves them."""

    def __init__(self, snap: Snapshot, util: np.ndarray, cores: np.ndarray):
        self.snap = snap
        self.free = snap.host_memory - snap.committed_memory()
        self.util = util.copy()
        self.cores = cores

    @classmethod
    def of(cls, snap: Snapshot, knowledge: Knowledge) -> Room:
        util = knowledge.host_cpu_util(LOAD_WINDOW)
        cores = knowledge.vm_cpu_cores(LOAD_WINDOW)
        if util is None or cores is None:  # no history yet: the VMs' vCPUs busy, the hosts as they are
            util, cores = np.zeros(len(snap.hosts)), snap.vm_vcpus.astype(float)
            util += np.bincount(snap.vm_host, weights=cores, minlength=len(snap.hosts)) / snap.host_cores
        return cls(snap, util, cores)

    def fits(self, group: np.ndarray, cpu_limit: float) -> np.ndarray:
        memory = self.snap.memory_held()[group].sum()
        return (self.free >= memory) & (self.util + self.cores[group].sum() / self.snap.host_cores <= cpu_limit)

    def take(self, v: int, src: int, dst: int) -> None:
        memory, cores = self.snap.memory_held()[v], self.cores[v]
        self.free[src] += memory
        self.free[dst] -= memory
        self.util[src] -= cores / self.snap.host_cores[src]
        self.util[dst] += cores / self.snap.host_cores[dst]
