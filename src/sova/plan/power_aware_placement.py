"""Power-aware placement of Beloglazov and Buyya (CCPE 24(13), 2012, §6.5 and Algorithm 1, PABFD) and
their consolidation of underloaded hosts, as functions over a cluster's arrays.

PABFD places VMs in order of CPU demand, largest first, each on the host whose power rises least (its
power curve at the load after minus its power now; a host that is not on draws nothing now, so waking
one costs its whole power at the load after), among the hosts it fits (CPU and memory) and that would not
be overloaded with it: its utilisation after stays within the host's ``limit`` (the detector's threshold).
A host with no load takes any VM that fits, as CloudSim skips the overload test there (a VM alone on a
host cannot be relieved by moving it). Ties go to the host listed first: rises within RISE_TIE watts
are equal (hosts on the same straight piece of the same curve rise by the same watts, and which of them
floating-point rounding would favour is an accident of the arithmetic).

Consolidation takes the least loaded active host (one with VMs) that is not overloaded, and moves all of
its VMs away with PABFD, or none of them: a host emptied can be switched off. It goes on with the next
least loaded until none is left to try; a host that received VMs, or could not be emptied, is not tried
again, and hosts that are not on receive nothing.

Loads are CPU demand in MIPS (or cores: any unit the capacities share); a host's utilisation is its
load over its capacity. Every step is a few numpy operations over the hosts: a PlanetLab day's 288 rounds
over 800 hosts take about a second.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sova.model.power_models import POINTS, power_at
from sova.plan.host_filter import HostFilter

RISE_TIE = 1e-9  # W: far below any real difference of rise (a 1-MIPS VM's differ by ~1e-3 W between pieces)


@dataclass
class Cluster:
    """What placement reads and changes: each host's capacity, load, free memory, power curve, whether it
    is on, and the utilisation its detector tolerates."""

    capacity: np.ndarray  # (hosts,) CPU
    load: np.ndarray  # (hosts,) CPU demand placed on it
    memory_free: np.ndarray  # (hosts,)
    curves: np.ndarray  # (hosts, 11) watts at 0, 10, ..., 100 %
    on: np.ndarray  # (hosts,) bool: running (a host asleep or off draws nothing now)
    limit: np.ndarray  # (hosts,) utilisation at or below which the host is not overloaded
    vm_host: np.ndarray  # (vms,) host index
    vm_demand: np.ndarray  # (vms,) CPU
    vm_memory: np.ndarray  # (vms,)
    moves: list[tuple[int, int]] = field(default_factory=list)  # (vm, destination) in order
    rules: HostFilter | None = None  # the placement rules, over vm_host (set after construction)
    # the power a host's rise is taken from: "now" (with this round's moves so far; a host not on draws
    # nothing), or "round-start" (CloudSim 3.0.3: its power before the round, a host not on at idle)
    rise_from: str = "now"
    # CloudSim 3.0.3's check instead of ``limit``: the detector run again on the host's CPU history with the
    # VM's added (`judge` takes hosts x samples of utilisation, newest last, and says which are overloaded);
    # histories in the loads' unit, hosts x samples and VMs x samples, kept up to date by move()
    judge: Callable[[np.ndarray], np.ndarray] | None = None
    history: np.ndarray | None = None
    vm_history: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.drawing = np.zeros(len(self.capacity))  # watts now: kept up to date by move()
        self._undo: list[tuple[int, int, bool]] = []  # per move: (vm, source, was the destination on)
        everyone = np.arange(len(self.capacity))
        at_start = self.power(everyone, self.load)
        self.drawing[self.on] = at_start[self.on]
        self.start_load = self.load.copy()  # the load before this round's moves
        self.start_power = at_start  # a host not on at its idle power (its curve at its load, 0)
        if self.judge is not None:  # the detector judges each move on the history: a move may fill the host
            self.limit = np.full(len(self.capacity), np.inf)
        top = self.capacity * (1 + 1e-12)  # demand each host can still take (see _refresh): kept by move()
        self.cpu_room = np.where(self.load <= 0, top, np.minimum(top, self.limit * self.capacity)) - self.load

    def overloaded_without(self, host: int, vms: list[int]) -> bool:
        """Whether the host's detector still finds it overloaded with `vms` gone: run again on the history
        of the rest (``judge``), or the load of the rest above the limit."""
        if self.judge is None:
            left = self.load[host] - float(self.vm_demand[vms].sum())
            return left > self.limit[host] * self.capacity[host]
        rest = self.history[host] - self.vm_history[vms].sum(axis=0)
        return bool(self.judge(rest[None, :] / self.capacity[host])[0])

    def power(self, hosts: np.ndarray, load: np.ndarray) -> np.ndarray:
        """Watts of `hosts` at `load`, on their curves."""
        return power_at(self.curves[hosts], load / self.capacity[hosts])

    def move(self, vm: int, dst: int) -> None:
        src = self.vm_host[vm]
        self._undo.append((vm, src, bool(self.on[dst])))
        self.on[dst] = True  # before its power is taken: it draws from now on
        self._shift(vm, src, dst)
        self.moves.append((vm, dst))

    def _shift(self, vm: int, src: int, dst: int) -> None:
        demand, memory = self.vm_demand[vm], self.vm_memory[vm]
        self.load[src] -= demand
        self.memory_free[src] += memory
        self.load[dst] += demand
        self.memory_free[dst] -= memory
        self.vm_host[vm] = dst
        if self.history is not None:
            self.history[src] -= self.vm_history[vm]
            self.history[dst] += self.vm_history[vm]
        for host in (src, dst):  # two hosts: plain arithmetic is faster than numpy here
            self._refresh(int(host))

    def _refresh(self, host: int) -> None:
        """The host's power now and its CPU room: up to the detector's limit, or its whole capacity when it
        has no load (as CloudSim skips the overload test there: a VM alone on a host cannot be relieved
        by moving it)."""
        load, capacity = float(self.load[host]), float(self.capacity[host])
        position = min(load / capacity, 1.0) * (POINTS - 1)
        low = min(int(position), POINTS - 2)
        below, above = self.curves[host, low], self.curves[host, low + 1]
        self.drawing[host] = below + (above - below) * (position - low) if self.on[host] else 0.0
        top = capacity * (1 + 1e-12)
        self.cpu_room[host] = (top if load <= 0 else min(top, float(self.limit[host]) * capacity)) - load

    def mark(self) -> int:
        """A point to go back to with undo()."""
        return len(self.moves)

    def undo(self, mark: int) -> None:
        """Take back the moves made since `mark`, latest first."""
        while len(self.moves) > mark:
            self.moves.pop()
            vm, src, was_on = self._undo.pop()
            dst = int(self.vm_host[vm])
            self.on[dst] = was_on
            self._shift(vm, dst, src)


def best_host(cluster: Cluster, vm: int, allowed: np.ndarray) -> int | None:
    """The allowed host where the VM fits, does not overload it, and raises its power least (None: none)."""
    demand = cluster.vm_demand[vm]
    ok = allowed & (cluster.memory_free >= cluster.vm_memory[vm]) & (cluster.cpu_room >= demand)
    ok[cluster.vm_host[vm]] = False
    if cluster.rules is not None:
        ok = cluster.rules.restrict(vm, ok)
    if cluster.judge is not None:  # CloudSim skips the check on a host with no load
        loaded = np.flatnonzero(ok & (cluster.load > 0))
        after = (cluster.history[loaded] + cluster.vm_history[vm]) / cluster.capacity[loaded, None]
        ok[loaded[cluster.judge(after)]] = False
    hosts = np.flatnonzero(ok)
    if len(hosts) <= 1:
        return int(hosts[0]) if len(hosts) else None
    before = cluster.start_power if cluster.rise_from == "round-start" else cluster.drawing
    rise = cluster.power(hosts, cluster.load[hosts] + demand) - before[hosts]
    return int(hosts[np.argmax(rise <= rise.min() + RISE_TIE)])  # the first of the least


def pabfd(cluster: Cluster, vms: list[int], allowed: np.ndarray, all_or_nothing: bool = False) -> list[int]:
    """Place `vms`, largest demand first (ties: the order given), moving each in `cluster`; the VMs no
    host could take (they stay where they are). With `all_or_nothing`, stop at the first such VM."""
    unplaced = []
    for vm in sorted(vms, key=lambda v: -cluster.vm_demand[v]):
        dst = best_host(cluster, vm, allowed)
        if dst is None:
            unplaced.append(vm)
            if all_or_nothing:
                break
        else:
            cluster.move(vm, dst)
    return unplaced


def consolidate(cluster: Cluster, overloaded: np.ndarray) -> list[int]:
    """Empty underloaded hosts, least loaded first, each all or nothing; the hosts emptied (to switch off).
    Hosts without VMs and overloaded ones are neither emptied nor given VMs. Where the power rise is taken
    from the round's start (CloudSim 3.0.3), so are the order and which hosts are off: a host woken by this
    round's overload phase is neither emptied nor given VMs."""
    on_host: list[list[int]] = [[] for _ in cluster.load]
    for vm, host in enumerate(cluster.vm_host):
        on_host[host].append(vm)
    allowed = np.array([bool(vms) for vms in on_host]) & ~overloaded
    order_load = cluster.load
    if cluster.rise_from == "round-start":
        allowed &= cluster.start_load > 0
        order_load = cluster.start_load
    untried = allowed.copy()
    emptied = []
    hopeful = _hopeful(cluster, on_host, allowed)
    stuck: list[tuple[float, float]] = []  # (demand, memory) of largest VMs that fitted nowhere this round
    for host in np.argsort(np.where(allowed, order_load / cluster.capacity, np.inf), kind="stable"):
        if not untried[host]:
            continue
        untried[host] = allowed[host] = False
        if not hopeful[host]:
            continue  # a VM of it fitted nowhere at the start, and room only shrinks as hosts fill or leave
        vms = [vm for vm in on_host[host] if cluster.vm_host[vm] == host]
        largest = max(vms, key=lambda vm: cluster.vm_demand[vm])  # the VM PABFD places first
        size = (float(cluster.vm_demand[largest]), float(cluster.vm_memory[largest]))
        if cluster.judge is None and any(size[0] >= demand and size[1] >= memory for demand, memory in stuck):
            continue  # a VM no larger fitted nowhere, and fewer hosts have less room since: this one cannot
            # (not so where the detector judges each move on the VM's history, not its size alone)
        mark = cluster.mark()
        if pabfd(cluster, vms, allowed, all_or_nothing=True):
            if cluster.mark() == mark and (cluster.rules is None or not cluster.rules.binds(largest)):
                # the largest VM itself fitted nowhere, by its size alone (not its rules)
                stuck = [s for s in stuck if not (s[0] >= size[0] and s[1] >= size[1])] + [size]
            cluster.undo(mark)  # one VM found no host: none of them moves
            continue
        emptied.append(host)
        for vm, dst in cluster.moves[mark:]:
            untried[dst] = False  # a host that took VMs is not emptied in turn
            on_host[dst].append(vm)
    return emptied


def _hopeful(cluster: Cluster, on_host: list[list[int]], allowed: np.ndarray) -> np.ndarray:
    """Per host: whether each VM of a candidate host fits, alone, on some other allowed host now. A host
    one of whose VMs fits nowhere cannot be emptied, then or later in the round (destinations only fill,
    and emptied hosts leave `allowed`); one matrix of the candidates' VMs against the hosts with room says
    so for all of them, instead of a PABFD try per host."""
    hopeful = np.zeros(len(cluster.load), dtype=bool)
    vms = np.array([vm for h in np.flatnonzero(allowed) for vm in on_host[h]], dtype=np.int64)
    if not len(vms):
        return hopeful
    room = np.flatnonzero(allowed & (cluster.memory_free >= cluster.vm_memory[vms].min()))
    ok = cluster.memory_free[room] >= cluster.vm_memory[vms][:, None]
    ok &= cluster.cpu_room[room] >= cluster.vm_demand[vms][:, None]
    ok &= room != cluster.vm_host[vms][:, None]
    stuck = np.bincount(cluster.vm_host[vms], weights=~ok.any(axis=1), minlength=len(hopeful))
    hopeful[allowed] = stuck[allowed] == 0
    return hopeful
