"""Plays a scenario's `[[events]]` into a run: operators' commands go to the Runtime (as they would reach
a manager), faults to the simulator (a manager learns of them only from what the hosts report). What each
cost is measured:
- a drain: when the host held no VM any more, and the migrations it took;
- a crash: the VMs it took down, how many were restarted elsewhere, and when the last of them ran again
  (the VM-seconds they were down in all, until restarted or the run ended).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sova.control.runtime import Runtime
from sova.model.scenario_events import ScenarioEvent
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
    down_s: float = 0.0  # a crash: VM-seconds its VMs were down
    _started: int = field(default=0, repr=False)

    def to_dict(self) -> dict:
        out = {"at": self.event.at, "kind": self.event.kind, "host": self.event.host, "applied": self.applied}
        took = None if self.done is None else self.done - self.applied
        if self.event.kind == "drain":
            out |= {"drained_at": self.done, "drain_time": took, "migrations": self.migrations}
        elif self.event.kind == "host-crash":
            out |= {"vms_down": len(self.down), "restarted": self.restarted, "all_running_at": self.done}
            out |= {"recovery_time": took, "down_vm_seconds": self.down_s}
        return out


class EventPlayer:
    def __init__(self, events: tuple[ScenarioEvent, ...], runtime: Runtime, sim: Simulator):
        self.pending = list(events)
        self.runtime, self.sim = runtime, sim
        self.records: list[EventRecord] = []

    def tick(self, seconds: float) -> None:
        """Apply the events that are due; follow the drains and crashes not done yet (`seconds`: the time
        since the last tick)."""
        now, sim = self.sim.t, self.sim
        for record in self.records:
            if record.done is None and record.event.kind == "host-crash":
                still = int(sim.vm_down[record.down].sum())
                record.down_s += seconds * still
                record.restarted = int((sim.vm_host[record.down] != record.host).sum())
                if not still:
                    record.done = now
        while self.pending and self.pending[0].at <= now + 1e-9:
            event = self.pending.pop(0)
            host = sim.host_names.index(event.host)
            record = EventRecord(event, host, now, _started=len(sim.migration_log))
            if event.kind == "host-crash":
                sim.crash_host(host)
                record.down = np.flatnonzero(sim.vm_down & (sim.vm_host == host))
            elif event.kind == "host-recover":
                sim.recover_host(host)
            else:
                getattr(self.runtime, event.kind)(event.host, by="the scenario")
            self.records.append(record)
        for record in self.records:
            if record.done is None and record.event.kind == "drain" and self._empty(record.host):
                record.done = now
                record.migrations = sum(
                    1 for m in sim.migration_log[record._started :] if m.src == record.event.host and m.moved
                )

    def _empty(self, host: int) -> bool:
        return not np.any((self.sim.vm_host == host) & self.sim.vm_present)
