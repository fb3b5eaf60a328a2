"""When each VM last changed host and when each host's set of VMs last changed, from every snapshot.

The Knowledge feeds it each snapshot it is given, so it does not depend on how much history the
Knowledge keeps: residence times longer than the history work. A VM seen on two hosts in consecutive
snapshots moved; across a change of inventory VMs are matched by name, a VM that went missing and comes
back on another host moved too, and a VM that was created or deleted changes its host's set of VMs (its
reports from before no longer describe the host).
"""

from __future__ import annotations

import numpy as np

from sova.model.snapshot import Snapshot

GONE_FOR = 3600.0  # s a missing VM is remembered, to tell a move from a deletion and a new VM


class PlacementTracker:
    def __init__(self) -> None:
        self._vms: tuple[str, ...] = ()
        self._hosts: tuple[str, ...] = ()
        self._vm_host: np.ndarray | None = None
        self._gone: dict[str, tuple[str, float]] = {}  # VMs missing lately: their last host, and since when
        self.vm_arrived: dict[str, float] = {}
        self.host_changed: dict[str, float] = {}
        self.host_received: dict[str, float] = {}
        self.host_sent: dict[str, float] = {}
        self.pair_moved: dict[tuple[str, str], float] = {}  # (source, destination): when a VM last went so

    def observe(self, snap: Snapshot) -> None:
        if self._vm_host is None:
            pass
        elif snap.vms == self._vms and snap.hosts == self._hosts:
            for v in np.flatnonzero(snap.vm_host != self._vm_host):
                self._moved(snap.vms[v], snap.hosts[self._vm_host[v]], snap.hosts[snap.vm_host[v]], snap.time)
        else:
            self._match_by_name(snap)
        self._vms, self._hosts, self._vm_host = snap.vms, snap.hosts, snap.vm_host.copy()

    def _match_by_name(self, snap: Snapshot) -> None:
        before = {vm: self._hosts[h] for vm, h in zip(self._vms, self._vm_host, strict=True)}
        for vm, h in zip(snap.vms, snap.vm_host, strict=True):
            host = snap.hosts[h]
            was = before.pop(vm, None) or self._gone.pop(vm, (None, 0.0))[0]
            if was is None:
                self.host_changed[host] = snap.time  # created here
            elif was != host:
                self._moved(vm, was, host, snap.time)  # also one that was missing a while (mid-migration)
        for vm, host in before.items():  # deleted, or missing for now (its host's daemon away, a migration)
            self.host_changed[host] = snap.time
            self._gone[vm] = (host, snap.time)
        # a VM missing for an hour was deleted: a VM of that name later is another one
        self._gone = {vm: seen for vm, seen in self._gone.items() if snap.time - seen[1] < GONE_FOR}

    def _moved(self, vm: str, src: str, dst: str, time: float) -> None:
        self.vm_arrived[vm] = time
        self.host_changed[src] = self.host_changed[dst] = time
        self.host_sent[src] = self.host_received[dst] = time
        self.pair_moved[(src, dst)] = time

    def hosts_within(self, events: dict[str, float], hosts: tuple[str, ...], now: float, seconds: float) -> np.ndarray:
        """Per host, whether it has an event of `events` (host_sent, host_received or host_changed) in the
        last `seconds`."""
        return np.array([now - events.get(h, -np.inf) < seconds for h in hosts])

    def moved_within(self, now: float, seconds: float) -> set[str]:
        return {vm for vm, t in self.vm_arrived.items() if now - t < seconds}

    def reports_since_change(self, snap: Snapshot, interval: float, n: int) -> np.ndarray:
        """n x hosts: whether each of the n reports up to `snap` was taken entirely after the host last changed."""
        changed = np.array([self.host_changed.get(h, -np.inf) for h in snap.hosts])
        starts = snap.time - interval * np.arange(n, 0, -1)  # start of each report, oldest first
        return starts[:, None] >= changed[None, :] - 1e-9
