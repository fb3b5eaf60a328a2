"""Per-interval resource utilisation of hosts and VMs, from the sensors: CPU, NIC and memory.

Each observation covers one reporting interval (10 s in Sova). A host's NIC utilisation is the larger
of transmit and receive; memory is what its VMs use (guest /proc/meminfo via the daemon) over what the
host offers them. A VM's loads are shares of its host's capacity, so a VM's and its host's loads add up.
"""

from __future__ import annotations

import numpy as np

from sova.model.knowledge import Knowledge

RESOURCES = ("cpu", "nic", "mem")


def vms_by_host(vm_host: np.ndarray, n_hosts: int) -> list[np.ndarray]:
    """The VM indices of each host, from one sort instead of a scan of all VMs per host."""
    order = np.argsort(vm_host, kind="stable")
    return np.split(order, np.searchsorted(vm_host[order], np.arange(1, n_hosts)))


def host_loads(knowledge: Knowledge, interval: float, n: int) -> np.ndarray | None:
    """The last n observations per host (n x hosts x 3: cpu, nic, mem), oldest first; None if too early."""
    end = knowledge.latest.time
    out = []
    for i in range(n - 1, -1, -1):
        w = knowledge.window(interval, end - i * interval)
        if w is None or w[1].time - w[0].time < interval * 0.5:
            return None
        old, new = w
        dt = new.time - old.time
        cpu = (new.host_cpu_time - old.host_cpu_time) / (dt * new.host_cores)
        tx = (new.nic_tx_bytes - old.nic_tx_bytes) * 8 / (dt * new.nic_bandwidth)
        rx = (new.nic_rx_bytes - old.nic_rx_bytes) * 8 / (dt * new.nic_bandwidth)
        used = np.bincount(new.vm_host, weights=new.vm_memory_used, minlength=len(new.hosts))
        out.append(np.stack([cpu, np.maximum(tx, rx), used / new.host_memory], axis=1))
    return np.array(out)


def vm_loads(knowledge: Knowledge, interval: float) -> np.ndarray | None:
    """Per VM over the last interval (VMs x 3): shares of its host's CPU, NIC and memory."""
    w = knowledge.window(interval)
    if w is None:
        return None
    old, new = w
    dt = new.time - old.time
    h = new.vm_host
    c0, c1 = old.counters, new.counters
    cpu = (c1.cpu_time - c0.cpu_time) / (dt * new.host_cores[h])
    tx = (c1.guest_tx_bytes - c0.guest_tx_bytes) * 8 / (dt * new.nic_bandwidth[h])
    rx = (c1.guest_rx_bytes - c0.guest_rx_bytes) * 8 / (dt * new.nic_bandwidth[h])
    return np.stack([cpu, np.maximum(tx, rx), new.vm_memory_used / new.host_memory[h]], axis=1)


class PlacementTracker:
    """Remembers when each VM last changed host and when each host's set of VMs last changed.

    Fed every snapshot a policy sees (or at least one per round); it does not depend on how much
    history the Knowledge keeps, so residence times longer than the history work.
    """

    def __init__(self) -> None:
        self._vms: tuple[str, ...] = ()
        self._hosts: tuple[str, ...] = ()
        self._vm_host: np.ndarray | None = None
        self.vm_arrived: dict[str, float] = {}
        self.host_changed: dict[str, float] = {}
        self.host_received: dict[str, float] = {}
        self.host_sent: dict[str, float] = {}
        self._seen = -np.inf

    def update(self, knowledge: Knowledge) -> None:
        for snap in knowledge.since(self._seen + 1e-6):
            self._seen = snap.time
            if self._vm_host is None or snap.vms != self._vms or snap.hosts != self._hosts:
                self._vms, self._hosts, self._vm_host = snap.vms, snap.hosts, snap.vm_host.copy()
                continue
            for v in np.flatnonzero(snap.vm_host != self._vm_host):
                src, dst = snap.hosts[self._vm_host[v]], snap.hosts[snap.vm_host[v]]
                self.vm_arrived[snap.vms[v]] = snap.time
                self.host_changed[src] = self.host_changed[dst] = snap.time
                self.host_sent[src] = self.host_received[dst] = snap.time
            self._vm_host = snap.vm_host.copy()

    def hosts_within(self, events: dict[str, float], hosts: tuple[str, ...], now: float, seconds: float) -> np.ndarray:
        """Per host, whether it has an event of `events` (host_sent / host_received) in the last `seconds`."""
        return np.array([now - events.get(h, -np.inf) < seconds for h in hosts])

    def moved_within(self, now: float, seconds: float) -> set[str]:
        return {vm for vm, t in self.vm_arrived.items() if now - t < seconds}

    def reports_since_change(self, knowledge: Knowledge, interval: float, n: int) -> np.ndarray:
        """n x hosts: whether each of the last n reports was taken entirely after the host last changed."""
        snap = knowledge.latest
        changed = np.array([self.host_changed.get(h, -np.inf) for h in snap.hosts])
        starts = snap.time - interval * np.arange(n, 0, -1)  # start of each report, oldest first
        return starts[:, None] >= changed[None, :] - 1e-9
