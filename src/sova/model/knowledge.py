"""The Knowledge of the MAPE-K loop: a bounded history of snapshots and the rates derived from it.

Rates are differences of cumulative counters over a window, as any monitoring system computes them
from real sensors.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from sova.model.scenario import TopologySpec
from sova.model.snapshot import Snapshot


class Knowledge:
    """Snapshot history (newest last) plus helpers for windowed rates, and the fabric from the inventory
    (an operator's description of the network, as the Virtue paper's experiment files give it)."""

    def __init__(self, history: int = 600, topology: TopologySpec | None = None):
        self.snapshots: deque[Snapshot] = deque(maxlen=history)
        self.topology = topology

    def add(self, snap: Snapshot) -> None:
        if self.snapshots and len(snap.vms) != len(self.snapshots[-1].vms):
            self.snapshots.clear()  # the inventory changed: old counters no longer line up
        self.snapshots.append(snap)

    @property
    def latest(self) -> Snapshot:
        return self.snapshots[-1]

    def __len__(self) -> int:
        return len(self.snapshots)

    def at_or_before(self, t: float) -> Snapshot | None:
        """The newest snapshot taken at or before time t."""
        for s in reversed(self.snapshots):
            if s.time <= t + 1e-9:
                return s
        return None

    def window(self, seconds: float, end: float | None = None) -> tuple[Snapshot, Snapshot] | None:
        """(older, newer) snapshots spanning about `seconds` up to `end` (default: latest)."""
        if len(self.snapshots) < 2:
            return None
        new = self.latest if end is None else self.at_or_before(end)
        if new is None:
            return None
        old = self.at_or_before(new.time - seconds)
        if old is None:
            old = self.snapshots[0]
        if old.time >= new.time:
            return None
        return old, new

    def host_cpu_util(self, seconds: float, end: float | None = None) -> np.ndarray | None:
        """Per host: CPU busy (all domains) / hardware threads, over the window."""
        w = self.window(seconds, end)
        if w is None:
            return None
        old, new = w
        return (new.host_cpu_time - old.host_cpu_time) / ((new.time - old.time) * new.host_cores)

    def vm_cpu_cores(self, seconds: float, end: float | None = None) -> np.ndarray | None:
        """Per VM: cores used over the window."""
        w = self.window(seconds, end)
        if w is None:
            return None
        old, new = w
        return (new.counters.cpu_time - old.counters.cpu_time) / (new.time - old.time)
