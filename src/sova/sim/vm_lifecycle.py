"""VMs that come and go during a run: creation at a scheduled time, admission, deletion.

Every VM of the scenario has a row from the start; one that is not there yet (or any more) runs no
work, holds no memory, CPU or VF, and is not reported by the driver. A VM that arrives with a named
host starts there if the host has the memory for it (else it is refused, as a hypervisor would refuse
it); one without a host waits as a request until the driver creates it where the admission policy
chose. A VM deleted while it migrates stops its migration; its VF is freed.

A part of ``Simulator`` (sim/engine.py), which holds the state these methods work on.
"""

from __future__ import annotations

import numpy as np

from sova.sim.records import LifecycleRecord, SimError

ARRIVED, CREATED, REFUSED, DELETED, WITHDRAWN = "arrived", "created", "refused", "deleted", "withdrawn"


class VmLifecycle:
    """The lifecycle part of the simulator: arrivals, admission requests and departures."""

    def _init_lifecycle(self, vms) -> None:
        """Arrivals and departures from the scenario, or from the trace of a VM that takes its life from
        one (which also sizes it). At 0, a VM without a host asks to be placed at once, and one sized by
        its trace is checked against its host as any arrival (the scenario's check could not size it)."""
        self.vm_arrive = np.array([v.arrive for v in vms], dtype=float)
        self.vm_depart = np.array([v.depart if v.depart > 0 else np.inf for v in vms], dtype=float)
        self._lives_from_traces(vms)
        self.vm_by_admission = np.array([v.host == "" for v in vms], dtype=bool)  # no host of its own
        self.waiting: dict[int, float] = {}  # VM -> when it asked to be placed (admission requests)
        self.lifecycle_log: list[LifecycleRecord] = []
        self.inventory_version = 0  # changes whenever a VM comes or goes: the driver's cue to re-list
        from_trace = np.array([v.from_trace for v in vms], dtype=bool)
        at_start = self.vm_arrive <= 0
        self.vm_present = at_start & ~self.vm_by_admission & ~from_trace
        self.vf_used = np.bincount(self.vm_host[self.vm_vf & self.vm_present], minlength=self.n_hosts).astype(np.int64)
        for vm in np.flatnonzero(at_start & (self.vm_by_admission | from_trace)):
            self._arrive(int(vm), 0.0, 0.0)
        arrive_due = np.flatnonzero(self.vm_arrive > 0)
        self._next_arrival = self._next_departure = 0
        depart_due = np.flatnonzero(np.isfinite(self.vm_depart))
        self._arrivals = arrive_due[np.argsort(self.vm_arrive[arrive_due], kind="stable")]
        self._departures = depart_due[np.argsort(self.vm_depart[depart_due], kind="stable")]

    def _lives_from_traces(self, vms) -> None:
        for kind, group in self.workloads.active():
            lifetimes = getattr(kind, "lifetimes", None)
            if lifetimes is None:
                continue
            for vm, life in zip(group.vm, lifetimes(group), strict=True):
                if not vms[vm].from_trace:
                    continue
                self.vm_arrive[vm], self.vm_depart[vm] = life.arrive_s, life.depart_s
                self.compute.size_vm(vm, life.cores)
                self.vm_mem[vm] = life.memory_mib
                self.vm_mem_used[vm] = min(self.vm_mem_used[vm], life.memory_mib)

    def _process_lifecycle(self, t: float) -> None:
        """Departures, then arrivals, due by time t (a VM that comes and goes within the step never runs)."""
        while self._next_departure < len(self._departures):
            vm = int(self._departures[self._next_departure])
            if self.vm_depart[vm] > t + 1e-9:
                break
            self._next_departure += 1
            self._depart(vm, float(self.vm_depart[vm]))
        while self._next_arrival < len(self._arrivals):
            vm = int(self._arrivals[self._next_arrival])
            if self.vm_arrive[vm] > t + 1e-9:
                break
            self._next_arrival += 1
            self._arrive(vm, float(self.vm_arrive[vm]), t)

    def _arrive(self, vm: int, at: float, now: float) -> None:
        if self.vm_depart[vm] <= now + 1e-9:
            return  # gone by the time its arrival is taken (it lived less than a step)
        if self.vm_by_admission[vm]:
            self.waiting[vm] = at
            self._log(at, vm, ARRIVED, "")
            return
        try:
            self._place(vm, int(self.vm_host[vm]))
        except SimError as exc:
            self._log(at, vm, REFUSED, self.host_names[self.vm_host[vm]], str(exc))
            return
        self._log(at, vm, CREATED, self.host_names[self.vm_host[vm]])

    def create_vm(self, vm: int, host: int) -> None:
        """Create a waiting VM on a host (the driver, for the admission policy); refuses what a hypervisor
        would refuse."""
        name = self.vm_names[vm]
        if vm not in self.waiting:
            state = "runs already" if self.vm_present[vm] else "is not waiting to be placed"
            raise SimError(f"{name} {state}")
        self._place(vm, host)
        del self.waiting[vm]
        self._log(self.t, vm, CREATED, self.host_names[host])

    def _place(self, vm: int, host: int) -> None:
        name, where = self.vm_names[vm], self.host_names[host]
        self.power.require_on(host)
        self.require_room(host, vm)
        if self.vm_vf[vm] and self.vf_used[host] >= self.max_vfs[host]:
            raise SimError(f"{where} has no free VF for {name} ({self.max_vfs[host]} in use)")
        self.vm_host[vm] = host
        self.vm_present[vm] = True
        if self.vm_vf[vm]:
            self.vf_used[host] += 1
        self._moved_vms.add(vm)
        self._routes_dirty = True
        self.inventory_version += 1

    def _depart(self, vm: int, at: float) -> None:
        if vm in self.waiting:
            del self.waiting[vm]
            self._log(at, vm, WITHDRAWN, "")
            return
        if not self.vm_present[vm]:
            return
        if vm in self.migrations.under_way:
            self._finish_migration(vm, "cancelled")  # the guest is gone: there is nothing left to copy
        plugging = self.vf_plugging.pop(vm, None)
        if plugging is not None:
            self.vf_pending = [op for op in self.vf_pending if op[1] != vm]
        if self.vm_vf[vm] or plugging is not None:
            self.vf_used[self.vm_host[vm]] -= 1
        self.vm_vf[vm] = False
        self.vm_present[vm] = False
        self._moved_vms.add(vm)
        self._routes_dirty = True
        self.inventory_version += 1
        self._log(at, vm, DELETED, self.host_names[self.vm_host[vm]])

    def _log(self, at: float, vm: int, event: str, host: str, message: str = "") -> None:
        self.lifecycle_log.append(LifecycleRecord(at, self.vm_names[vm], event, host, message))
