"""The Knowledge of the MAPE-K loop: a history of snapshots, bounded in time, and the rates derived from it.

Rates are differences of cumulative counters over a window, as any monitoring system computes them
from real sensors. Every snapshot also goes to the placement tracker (``placement``), which remembers
migrations for longer than the history.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator

import numpy as np

from sova.model.placement_rules import RuleBook
from sova.model.placement_tracker import PlacementTracker
from sova.model.scenario import TopologySpec
from sova.model.snapshot import Snapshot, counter_rate
from sova.model.snapshot_align import aligned
from sova.model.snapshot_sharing import share_unchanged


class Knowledge:
    """Snapshot history (newest last) plus helpers for windowed rates, the fabric from the inventory (an
    operator's description of the network, as the Virtue paper's experiment files give it) and the
    placement rules.

    The history is kept by time: `history` seconds back from the newest snapshot (and the snapshot just
    before that, so a window of the whole history has its older end), across changes of inventory: a VM
    that comes or goes leaves every other VM's history as it was. Lookups by time are binary
    searches, so a policy asking for a window costs the same whatever the history holds.
    """

    def __init__(self, history: float = 600.0, topology: TopologySpec | None = None, rules: RuleBook | None = None):
        self.history = history
        self.topology = topology
        self.rules = rules if rules is not None else RuleBook()  # the placement rules in force (maintenance too)
        self._snaps: list[Snapshot] = []
        self._times: list[float] = []
        self._first = 0  # index of the oldest snapshot kept
        self.placement = PlacementTracker()

    def add(self, snap: Snapshot) -> None:
        if self._snaps and snap.time <= self._times[-1]:
            raise ValueError(f"snapshot at {snap.time:g} s is not newer than the last one ({self._times[-1]:g} s)")
        if self._snaps:
            snap = share_unchanged(snap, self._snaps[-1])
        self._snaps.append(snap)
        self._times.append(snap.time)
        self.placement.observe(snap)
        oldest_needed = bisect.bisect_right(self._times, snap.time - self.history, lo=self._first) - 1
        self._first = max(self._first, min(oldest_needed, len(self._snaps) - 2))
        if 2 * self._first > len(self._snaps):  # drop what is no longer kept (amortized: half the list at most)
            del self._snaps[: self._first], self._times[: self._first]
            self._first = 0

    def frozen(self) -> Knowledge:
        """What is kept now, as a Knowledge of its own that nothing feeds: to be read off the loop (in a thread)
        while this one goes on. Cheap: the snapshots are shared (they are never changed), the lists are not."""
        copy = Knowledge(self.history, self.topology, RuleBook(self.rules.rules))
        copy._snaps, copy._times = self._snaps[self._first :], self._times[self._first :]
        return copy

    @property
    def latest(self) -> Snapshot:
        return self._snaps[-1]

    @property
    def snapshots(self) -> list[Snapshot]:
        """Every snapshot kept, oldest first."""
        return self._snaps[self._first :]

    def since(self, t: float) -> list[Snapshot]:
        """The snapshots taken at or after time t, oldest first."""
        return self._snaps[bisect.bisect_left(self._times, t - 1e-9, lo=self._first) :]

    def after(self, t: float) -> Iterator[Snapshot]:
        """The snapshots taken after time t, oldest first, one at a time (read only if needed)."""
        return itertools.islice(self._snaps, bisect.bisect_right(self._times, t + 1e-9, lo=self._first), None)

    def __len__(self) -> int:
        return len(self._snaps) - self._first

    def at_or_before(self, t: float) -> Snapshot | None:
        """The newest snapshot taken at or before time t."""
        i = bisect.bisect_right(self._times, t + 1e-9, lo=self._first) - 1
        return self._snaps[i] if i >= self._first else None

    def window(self, seconds: float, end: float | None = None) -> tuple[Snapshot, Snapshot] | None:
        """(older, newer) snapshots spanning about `seconds` up to `end` (default: latest); the older one
        re-indexed like the newer when VMs or hosts came or went between them (model.snapshot_align)."""
        if len(self) < 2:
            return None
        new = self.latest if end is None else self.at_or_before(end)
        if new is None:
            return None
        old = self.at_or_before(new.time - seconds) or self._snaps[self._first]
        if old.time >= new.time:
            return None
        return aligned(old, new, self.after(old.time)), new

    def host_cpu_util(self, seconds: float, end: float | None = None) -> np.ndarray | None:
        """Per host: CPU busy (all domains) / hardware threads, over the window."""
        w = self.window(seconds, end)
        if w is None:
            return None
        old, new = w
        return counter_rate(old, new, "host_cpu_time", per=new.host_cores)

    def vm_cpu_cores(self, seconds: float, end: float | None = None) -> np.ndarray | None:
        """Per VM: cores used over the window."""
        w = self.window(seconds, end)
        if w is None:
            return None
        old, new = w
        return counter_rate(old, new, "cpu_time")
