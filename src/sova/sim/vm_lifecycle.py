"""VMs that come and go during a run: when each arrives and departs, the admission requests waiting, and
the log of what became of each.

Every VM of the scenario has a row from the start; one that is not there yet (or any more) runs no
work, holds no memory, CPU or VF, and is not reported by the driver. A VM that arrives with a named
host starts there if the host has the memory for it (else it is refused, as a hypervisor would refuse
it); one without a host waits as a request until the driver creates it where the admission policy
chose. A VM deleted while it migrates stops its migration; its VF is freed.

A subsystem of ``Simulator`` (sim/engine.py) that owns the schedule, the requests and the log; the engine
places and removes the VMs it says are due (sim/hypervisor_ops.py), which takes the other subsystems.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from sova.model.scenario import VmSpec
from sova.sim.compute import Compute
from sova.sim.records import LifecycleRecord
from sova.sim.vm_inventory import VmInventory
from sova.sim.workloads import Workloads

ARRIVED, CREATED, REFUSED, DELETED, WITHDRAWN = "arrived", "created", "refused", "deleted", "withdrawn"
ARRIVE, DEPART = "arrive", "depart"


class VmLifecycle:
    """Arrivals, admission requests and departures."""

    def __init__(self, vm_specs: Sequence[VmSpec], workloads: Workloads, compute: Compute, vms: VmInventory):
        """Arrivals and departures from the scenario, or from the trace of a VM that takes its life from
        one (which also sizes it: its cores and memory)."""
        self.vm_names = [v.name for v in vm_specs]
        self.arrive = np.array([v.arrive for v in vm_specs], dtype=float)
        self.depart = np.array([v.depart if v.depart > 0 else np.inf for v in vm_specs], dtype=float)
        self.from_trace = np.array([v.from_trace for v in vm_specs], dtype=bool)
        self._lives_from_traces(workloads, compute, vms)
        self.by_admission = np.array([v.host == "" for v in vm_specs], dtype=bool)  # no host of its own
        self.waiting: dict[int, float] = {}  # VM -> when it asked to be placed (admission requests)
        self.log: list[LifecycleRecord] = []
        arrive_due = np.flatnonzero(self.arrive > 0)
        depart_due = np.flatnonzero(np.isfinite(self.depart))
        self._arrivals = arrive_due[np.argsort(self.arrive[arrive_due], kind="stable")]
        self._departures = depart_due[np.argsort(self.depart[depart_due], kind="stable")]
        self._next_arrival = self._next_departure = 0

    def _lives_from_traces(self, workloads: Workloads, compute: Compute, vms: VmInventory) -> None:
        for kind, group in workloads.active():
            departures = getattr(kind, "departures", None)  # a trace that ends a VM it does not size
            if departures is not None:
                self.depart[group.vm] = np.minimum(self.depart[group.vm], departures(group))
            lifetimes = getattr(kind, "lifetimes", None)
            if lifetimes is None:
                continue
            for vm, life in zip(group.vm, lifetimes(group), strict=True):
                if not self.from_trace[vm]:
                    continue
                self.arrive[vm], self.depart[vm] = life.arrive_s, life.depart_s
                compute.size_vm(vm, life.cores)
                vms.memory[vm] = life.memory_mib
                vms.memory_used[vm] = min(vms.memory_used[vm], life.memory_mib)

    def there_at_start(self) -> np.ndarray:
        """Per VM: it runs on its host from the start, unchecked (the scenario's check placed it)."""
        return (self.arrive <= 0) & ~self.by_admission & ~self.from_trace

    def arriving_at_start(self) -> np.ndarray:
        """The VMs that arrive at 0 as any arrival: one without a host asks to be placed at once; one sized
        by its trace is checked against its host (the scenario's check could not size it)."""
        return np.flatnonzero((self.arrive <= 0) & (self.by_admission | self.from_trace))

    def due(self, t: float) -> Iterator[tuple[str, int, float]]:
        """(ARRIVE or DEPART, VM, when) of each departure, then each arrival, due by time t (a VM that comes
        and goes within the step never runs)."""
        while self._next_departure < len(self._departures):
            vm = int(self._departures[self._next_departure])
            if self.depart[vm] > t + 1e-9:
                break
            self._next_departure += 1
            yield DEPART, vm, float(self.depart[vm])
        while self._next_arrival < len(self._arrivals):
            vm = int(self._arrivals[self._next_arrival])
            if self.arrive[vm] > t + 1e-9:
                break
            self._next_arrival += 1
            yield ARRIVE, vm, float(self.arrive[vm])

    def to_place(self, vm: int, at: float, now: float) -> bool:
        """An arrival: True if the VM is to start on its host now; one placed by admission waits as a
        request, and one gone by the time its arrival is taken (it lived less than a step) never starts."""
        if self.depart[vm] <= now + 1e-9:
            return False
        if self.by_admission[vm]:
            self.waiting[vm] = at
            self.record(at, vm, ARRIVED, "")
            return False
        return True

    def withdraw(self, vm: int, at: float) -> bool:
        """A departure of a VM still waiting to be placed: its request is withdrawn (True)."""
        if vm not in self.waiting:
            return False
        del self.waiting[vm]
        self.record(at, vm, WITHDRAWN, "")
        return True

    def record(self, at: float, vm: int, event: str, host: str, message: str = "") -> None:
        self.log.append(LifecycleRecord(at, self.vm_names[vm], event, host, message))
