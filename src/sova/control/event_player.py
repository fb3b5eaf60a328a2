"""Plays a scenario's `[[events]]` into a run: operators' commands go to the Runtime (as they would reach
a manager), and what each drain took is measured: when the host held no VM any more, and how many
migrations it took.
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
    applied: float
    done: float | None = None  # a drain: when the host held no VM any more
    migrations: int = 0  # a drain: migrations off the host until then
    _started: int = field(default=0, repr=False)

    def to_dict(self) -> dict:
        out = {"at": self.event.at, "kind": self.event.kind, "host": self.event.host, "applied": self.applied}
        if self.event.kind == "drain":
            out |= {"drained_at": self.done, "drain_time": None if self.done is None else self.done - self.applied}
            out["migrations"] = self.migrations
        return out


class EventPlayer:
    def __init__(self, events: tuple[ScenarioEvent, ...], runtime: Runtime, sim: Simulator):
        self.pending = list(events)
        self.runtime, self.sim = runtime, sim
        self.records: list[EventRecord] = []

    def tick(self) -> None:
        """Apply the events that are due; follow the drains not done yet."""
        now = self.sim.t
        while self.pending and self.pending[0].at <= now + 1e-9:
            event = self.pending.pop(0)
            getattr(self.runtime, event.kind)(event.host, by="the scenario")
            self.records.append(EventRecord(event, now, _started=len(self.sim.migration_log)))
        for record in self.records:
            if record.event.kind == "drain" and record.done is None and self._empty(record.event.host):
                record.done = now
                record.migrations = sum(
                    1 for m in self.sim.migration_log[record._started :] if m.src == record.event.host and m.moved
                )

    def _empty(self, host: str) -> bool:
        h = self.sim.host_names.index(host)
        return not np.any((self.sim.vm_host == h) & self.sim.vm_present)
