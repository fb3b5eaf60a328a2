"""Plays a scenario's `[[events]]` into a run: operators' commands go to the Runtime (as they would reach
a manager), faults to the simulator (a manager learns of them only from what the hosts report). What each
cost is measured:
- a drain: when the host held no VM any more, and the migrations it took;
- a crash: the VMs it took down, how many were restarted elsewhere, and when the last of them ran again
  (the VM-seconds they were down in all, until restarted or the run ended);
- a NIC down: the VMs cut off, and the VM-seconds they spent on the host while it was (a VM migrated
  away is no longer cut off);
- failed VFs: the VMs that fell back to their vNICs;
- a sensor gap: whether the host was declared failed meanwhile, and fenced (powered off: a host that is
  silent may still run its VMs), and how many of its VMs were restarted elsewhere after that.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sova.control.runtime import Runtime
from sova.model.placement_rules import hosts_failed, hosts_fenced
from sova.model.scenario_events import FAULT_ENDS, ScenarioEvent
from sova.sim.engine import Simulator


@dataclass
class EventRecord:
    """One event as it happened."""

    event: ScenarioEvent
    host: int  # the simulator's index of its host
    applied: float
    done: float | None = None  # a drain: when the host held no VM any more; a crash: when its last VM ran again
    migrations: int = 0  # a drain: migrations off the host until then
    down: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # a crash: the VMs it took down
    restarted: int = 0  # a crash: of those, restarted on another host
    down_s: float = 0.0  # a crash: VM-seconds its VMs were down; a NIC down: VM-seconds its VMs were cut off
    ended: float | None = None  # a NIC down or failed VFs: when they worked again
    declared_failed: bool = False  # a sensor gap: the runtime declared the host failed meanwhile
    fenced: bool = False  # a sensor gap: the host was fenced (powered off) once declared failed
    restarts: int = 0  # a sensor gap: restarts of its VMs that ended well
    restarts_failed: int = 0  # a sensor gap: restarts of its VMs that failed
    _started: int = field(default=0, repr=False)

    def to_dict(self) -> dict:
        out = {"at": self.event.at, "kind": self.event.kind, "host": self.event.host, "applied": self.applied}
        took = None if self.done is None else self.done - self.applied
        if self.event.kind == "drain":
            out |= {"drained_at": self.done, "drain_time": took, "migrations": self.migrations}
        elif self.event.kind == "host-crash":
            out |= {"vms_down": len(self.down), "restarted": self.restarted, "all_running_at": self.done}
            out |= {"recovery_time": took, "down_vm_seconds": self.down_s}
        elif self.event.kind == "nic-down":
            out |= {"vms_cut": len(self.down), "up_at": self.ended, "cut_vm_seconds": self.down_s}
        elif self.event.kind == "vf-fail":
            out |= {"vms_fell_back": len(self.down), "recovered_at": self.ended}
        elif self.event.kind == "sensor-gap":
            out |= {"duration": self.event.duration, "declared_failed": self.declared_failed}
            out |= {"fenced": self.fenced, "restarts": self.restarts, "restarts_failed": self.restarts_failed}
        return out


class EventPlayer:
    def __init__(self, events: tuple[ScenarioEvent, ...], runtime: Runtime, sim: Simulator):
        self.pending = list(events)
        self.runtime, self.sim = runtime, sim
        self.records: list[EventRecord] = []
        self._audited = 0  # audit entries looked at

    def tick(self, seconds: float) -> None:
        """Apply the events that are due; follow the drains and crashes not done yet (`seconds`: the time
        since the last tick)."""
        now, sim = self.sim.t, self.sim
        for record in self.records:
            self._follow(record, seconds)
            if record.done is None and record.event.kind == "host-crash":
                still = int(sim.faults.vm_down[record.down].sum())
                record.down_s += seconds * still
                record.restarted = int((sim.vms.host[record.down] != record.host).sum())
                if not still:
                    record.done = now
        self._audited = len(self.runtime.audit.entries)
        while self.pending and self.pending[0].at <= now + 1e-9:
            event = self.pending.pop(0)
            host = sim.host_names.index(event.host)
            record = EventRecord(event, host, now, _started=len(sim.migrations.log))
            if event.kind in FAULT_ENDS.values():
                self._end(event, host, now)
                continue
            if event.kind == "host-crash":
                sim.crash_host(host)
                record.down = np.flatnonzero(sim.faults.vm_down & (sim.vms.host == host))
            elif event.kind == "nic-down":
                record.down = np.flatnonzero(sim.vms.on_host(host))
                sim.network.nic_down(host)
            elif event.kind == "vf-fail":
                record.down = np.flatnonzero((sim.vms.host == host) & sim.vms.on_vf)
                sim.vfs.fail(host, sim.t)
            elif event.kind == "sensor-gap":
                sim.faults.silence(host, event.duration, sim.t)
            else:
                getattr(self.runtime, event.kind)(event.host, by="the scenario")
            self.records.append(record)
        for record in self.records:
            if record.done is None and record.event.kind == "drain" and self._empty(record.host):
                record.done = now
                record.migrations = sum(
                    1 for m in sim.migrations.log[record._started :] if m.src == record.event.host and m.moved
                )

    def _end(self, event: ScenarioEvent, host: int, now: float) -> None:
        """A fault ends: the simulator takes it back, and its record notes when."""
        if event.kind == "host-recover":
            self.sim.faults.recover(host, self.sim.t)
        elif event.kind == "nic-up":
            self.sim.network.nic_up_again(host)
        else:
            self.sim.vfs.recover(host)
        start = next(k for k, end in FAULT_ENDS.items() if end == event.kind)
        for record in self.records:
            if record.event.kind == start and record.host == host and record.ended is None:
                record.ended = now
        self.records.append(EventRecord(event, host, now))

    def _follow(self, record: EventRecord, seconds: float) -> None:
        """A NIC down counts its VMs still on the host; a sensor gap, whether the host was declared failed."""
        kind, sim = record.event.kind, self.sim
        if kind == "nic-down" and record.ended is None:
            record.down_s += seconds * int((sim.vms.host[record.down] == record.host).sum())
        elif kind == "sensor-gap":
            rules = self.runtime.knowledge.rules
            if sim.t <= record.applied + record.event.duration + seconds:
                record.declared_failed |= record.event.host in hosts_failed(rules)
            record.fenced |= record.declared_failed and record.event.host in hosts_fenced(rules)
            new = self.runtime.audit.entries[self._audited :] if record.declared_failed else []
            ends = [e for e in new if e.event == "finished"]
            because = f"{record.event.host} failed;"
            for entry in (e for e in ends if e.action.startswith("restart-vm") and e.reason.startswith(because)):
                record.restarts += entry.status == "ok"
                record.restarts_failed += entry.status == "failed"

    def _empty(self, host: int) -> bool:
        return not self.sim.vms.on_host(host).any()
