"""Per-interval resource utilisation of hosts and VMs, from the sensors: CPU, NIC and memory.

Each observation covers one reporting interval (10 s in Sova). A host's NIC utilisation is the larger
of transmit and receive; memory is what its VMs use (guest /proc/meminfo via the daemon) over what the
host offers them. A VM's loads are shares of its host's capacity, so a VM's and its host's loads add up.
"""

from __future__ import annotations

import numpy as np

from sova.model.knowledge import Knowledge
from sova.model.snapshot import Snapshot, counter_rate

RESOURCES = ("cpu", "nic", "mem")


def host_capacity(snap: Snapshot) -> np.ndarray:
    """Hosts x RESOURCES: cores, NIC bit/s and memory MiB, the units a load's share is of."""
    return np.stack([snap.host_cores, snap.nic_bandwidth, snap.host_memory], axis=1).astype(float)


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
        cpu = counter_rate(old, new, "host_cpu_time", per=new.host_cores)
        tx = counter_rate(old, new, "nic_tx_bytes", scale=8, per=new.nic_bandwidth)
        rx = counter_rate(old, new, "nic_rx_bytes", scale=8, per=new.nic_bandwidth)
        used = np.bincount(new.vm_host, weights=new.vm_memory_used, minlength=len(new.hosts))
        out.append(np.stack([cpu, np.maximum(tx, rx), used / new.host_memory], axis=1))
    return np.array(out)


def vm_loads(knowledge: Knowledge, interval: float) -> np.ndarray | None:
    """Per VM over the last interval (VMs x 3): shares of its host's CPU, NIC and memory."""
    w = knowledge.window(interval)
    if w is None:
        return None
    old, new = w
    host = new.vm_host
    cpu = counter_rate(old, new, "cpu_time", per=new.host_cores[host])
    tx = counter_rate(old, new, "guest_tx_bytes", scale=8, per=new.nic_bandwidth[host])
    rx = counter_rate(old, new, "guest_rx_bytes", scale=8, per=new.nic_bandwidth[host])
    return np.stack([cpu, np.maximum(tx, rx), new.vm_memory_used / new.host_memory[host]], axis=1)
