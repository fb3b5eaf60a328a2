"""Power-aware placement of Beloglazov and Buyya (CCPE 24(13), 2012, §6.5 and Algorithm 1, PABFD) and
their consolidation of underloaded hosts, as functions over a cluster's arrays.

PABFD places VMs in order of CPU demand, largest first, each on the host whose power rises least (its
power curve at the load after minus at the load before), among the hosts it fits (CPU and memory) and
that would not be overloaded with it. Ties go to the host listed first. Consolidation takes the least
loaded active host (one with VMs) that is not overloaded, and moves all of its VMs away with PABFD, or
none of them: a host emptied can be switched off. It goes on with the next least loaded until none is
left to try; a host that received VMs, or could not be emptied, is not tried again.

Loads are CPU demand in MIPS (or cores: any unit the capacities share); a host's utilisation is its
load over its capacity.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sova.model.power_models import power_at

# whether a host would be overloaded at a load (by the policy's detector): (host, load) -> bool
WouldOverload = Callable[[int, float], bool]


@dataclass
class Cluster:
    """What placement reads and changes: each host's capacity, load and free memory, and power curve."""

    capacity: np.ndarray  # (hosts,) CPU
    load: np.ndarray  # (hosts,) CPU demand placed on it
    memory_free: np.ndarray  # (hosts,)
    curves: np.ndarray  # (hosts, 11) watts at 0, 10, ..., 100 %
    vm_host: np.ndarray  # (vms,) host index
    vm_demand: np.ndarray  # (vms,) CPU
    vm_memory: np.ndarray  # (vms,)
    moves: list[tuple[int, int]] = field(default_factory=list)  # (vm, destination) in order

    def power(self, hosts: np.ndarray, load: np.ndarray) -> np.ndarray:
        return power_at(self.curves[hosts], load / self.capacity[hosts])

    def move(self, vm: int, dst: int) -> None:
        src = self.vm_host[vm]
        self.load[src] -= self.vm_demand[vm]
        self.memory_free[src] += self.vm_memory[vm]
        self.load[dst] += self.vm_demand[vm]
        self.memory_free[dst] -= self.vm_memory[vm]
        self.vm_host[vm] = dst
        self.moves.append((vm, dst))


def best_host(cluster: Cluster, vm: int, allowed: np.ndarray, would_overload: WouldOverload) -> int | None:
    """The allowed host where the VM fits, does not overload it, and raises its power least (None: none)."""
    demand, memory = cluster.vm_demand[vm], cluster.vm_memory[vm]
    hosts = np.flatnonzero(
        allowed
        & (cluster.load + demand <= cluster.capacity + 1e-9)
        & (cluster.memory_free >= memory)
        & (cluster.vm_host[vm] != np.arange(len(cluster.load)))
    )
    hosts = [h for h in hosts if not would_overload(int(h), float(cluster.load[h] + demand))]
    if not hosts:
        return None
    hosts = np.array(hosts)
    rise = cluster.power(hosts, cluster.load[hosts] + demand) - cluster.power(hosts, cluster.load[hosts])
    return int(hosts[np.argmin(rise)])


def pabfd(cluster: Cluster, vms: list[int], allowed: np.ndarray, would_overload: WouldOverload) -> list[int]:
    """Place `vms`, largest demand first (ties: the order given), moving each in `cluster`; the VMs no
    host could take (they stay where they are)."""
    unplaced = []
    for vm in sorted(vms, key=lambda v: -cluster.vm_demand[v]):
        dst = best_host(cluster, vm, allowed, would_overload)
        if dst is None:
            unplaced.append(vm)
        else:
            cluster.move(vm, dst)
    return unplaced


def consolidate(cluster: Cluster, overloaded: np.ndarray, would_overload: WouldOverload) -> list[int]:
    """Empty underloaded hosts, least loaded first, each all or nothing; the hosts emptied (to switch off).
    Hosts without VMs (off) and overloaded ones are neither emptied nor given VMs."""
    active = np.bincount(cluster.vm_host, minlength=len(cluster.load)) > 0
    allowed = active & ~overloaded
    untried = allowed.copy()
    emptied = []
    while untried.any():
        util = np.where(untried, cluster.load / cluster.capacity, np.inf)
        host = int(np.argmin(util))
        untried[host] = allowed[host] = False
        before = (len(cluster.moves), cluster.load.copy(), cluster.memory_free.copy(), cluster.vm_host.copy())
        if pabfd(cluster, list(np.flatnonzero(cluster.vm_host == host)), allowed, would_overload):
            del cluster.moves[before[0] :]  # one VM found no host: none of them moves
            cluster.load, cluster.memory_free, cluster.vm_host = before[1], before[2], before[3]
            continue
        emptied.append(host)
        for _, dst in cluster.moves[before[0] :]:
            untried[dst] = False  # a host that took VMs is not emptied in turn
    return emptied
