"""What CloudScope's model reads, learned online from what hosts report: each VM's loading vector
(Eq. 6: the share of its time on CPU, disk and network) and each host's load (the sums of Eq. 2-5).

Over a window of the Knowledge (the first and last snapshots, re-indexed alike), per VM:
- CPU: its CPU time per second over its vCPUs (the share of time its vCPUs compute); in the host's sum
  of Eq. 2 a VM counts what it got plus what it waited for (counters show what the host handed out, so
  an oversubscribed host shows only in its VMs' waiting time);
- disk: the time its completed IOs took per second (libvirt's rd/wr_total_times), at most 1;
- network: the time its bytes would take on the port, (the busier direction) x 8 / the port's bit rate, at
  most 1, counting the bytes it wanted to move (``guest_*_wanted``: what it would have sent and received
  had nothing but its own path held it back), not only those it carried: carried traffic never exceeds
  the port, so Eq. 5 would never see it oversubscribed.
The loading vector is the three shares over their sum (a VM that did nothing counts as CPU-bound: its
slowdown is then its CPU's). The host's disk channel is the disk its VMs' requests queue at: its queue is
the sum of their requests' time outstanding per second (Little's law over rd/wr_total_times), which Eq. 4
reads as ρ/(1-ρ). Its Dom0 weight is the snapshot's where the driver reports one
(the simulator; Xen's Domain-0), in the same units as the guests' weights; where it is unknown (KVM has
no Dom0), Eq. 8 reduces to Eq. 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sova.analyze.vslowdown import HostLoad, VmLoad
from sova.model.knowledge import Knowledge
from sova.model.snapshot import Snapshot, counter_rate


@dataclass(frozen=True)
class VmUsage:
    """Per VM of `snapshot`, rates over the window: cores got and cores waited for (runnable, not running:
    XenMon's waiting, libvirt's vcpu wait), disk bytes/s, ops/s and busy s/s, network bytes/s and
    packets/s each way; per host: Dom0's CPU use over its vCPUs."""

    snapshot: Snapshot
    cpu: np.ndarray
    cpu_wait: np.ndarray
    disk_bytes: np.ndarray
    disk_ops: np.ndarray
    disk_busy: np.ndarray
    tx_bytes: np.ndarray
    rx_bytes: np.ndarray
    tx_wanted: np.ndarray
    rx_wanted: np.ndarray
    tx_packets: np.ndarray
    rx_packets: np.ndarray
    dom0_util: np.ndarray


def window_usage(knowledge: Knowledge, seconds: float) -> VmUsage | None:
    """Rates over the last `seconds` (None before two snapshots exist)."""
    ends = knowledge.window(seconds)
    if ends is None:
        return None
    first, last = ends

    def rate(name: str) -> np.ndarray:
        return counter_rate(first, last, name)

    return VmUsage(
        snapshot=last,
        cpu=rate("cpu_time"),
        cpu_wait=rate("wait_time"),
        disk_bytes=rate("blk_rd_bytes") + rate("blk_wr_bytes"),
        disk_ops=rate("blk_rd_ops") + rate("blk_wr_ops"),
        disk_busy=rate("blk_time"),
        tx_bytes=rate("guest_tx_bytes"),
        rx_bytes=rate("guest_rx_bytes"),
        tx_wanted=rate("guest_tx_wanted"),
        rx_wanted=rate("guest_rx_wanted"),
        tx_packets=rate("guest_tx_packets"),
        rx_packets=rate("guest_rx_packets"),
        dom0_util=rate("dom0_cpu_time") / np.maximum(last.dom0_vcpus, 1e-9),
    )


def _per(amount: np.ndarray, count: np.ndarray) -> np.ndarray:
    return np.where(count > 0, amount / np.maximum(count, 1e-300), 0.0)


def loading_vectors(u: VmUsage) -> np.ndarray:
    """Eq. 6 per VM (VMs x 3: CPU, disk, network), each row summing to 1."""
    snap = u.snapshot
    port = snap.nic_bandwidth[snap.vm_host]
    shares = np.stack(
        [
            u.cpu / np.maximum(snap.vm_vcpus, 1e-9),
            np.minimum(u.disk_busy, 1.0),
            np.minimum(np.maximum(u.tx_wanted, u.rx_wanted) * 8 / np.maximum(port, 1e-300), 1.0),
        ],
        axis=1,
    )
    total = shares.sum(axis=1, keepdims=True)
    idle = total[:, 0] <= 0
    shares[idle] = (1.0, 0.0, 0.0)
    return shares / np.where(idle, 1.0, total[:, 0])[:, None]


def vm_terms(u: VmUsage) -> dict[str, np.ndarray]:
    """Each VM's terms in its host's sums (arrays over VMs), and its part of Dom0's work."""
    snap = u.snapshot
    io = u.disk_bytes + u.tx_bytes + u.rx_bytes
    host_io = np.bincount(snap.vm_host, weights=io, minlength=len(snap.hosts))
    return {
        "cpu_demand": u.cpu + u.cpu_wait,  # what it got and what it waited for: util x vCPU as it asked
        "disk_bs": _per(u.disk_bytes, u.disk_ops),
        "net_tx_bs": _per(u.tx_bytes, u.tx_packets),
        "net_rx_bs": _per(u.rx_bytes, u.rx_packets),
        "disk_queue": u.disk_busy,  # its requests' time outstanding per second: its part of the queue
        "net_tx_demand": u.tx_wanted * 8,
        "net_rx_demand": u.rx_wanted * 8,
        "weight": snap.vm_weight.astype(float),
        "dom0_util": u.dom0_util[snap.vm_host] * _per(io, host_io[snap.vm_host]),
    }


def host_load(u: VmUsage, terms: dict[str, np.ndarray] | None = None) -> HostLoad:
    """Every host's HostLoad: the sums of its VMs' terms, Dom0's measured use and the port's capacity."""
    snap = u.snapshot
    terms = vm_terms(u) if terms is None else terms
    n = len(snap.hosts)

    def total(key: str) -> np.ndarray:
        return np.bincount(snap.vm_host, weights=terms[key], minlength=n)

    guests = np.bincount(snap.vm_host, minlength=n)
    weight_mean = np.where(guests > 0, total("weight") / np.maximum(guests, 1), 256.0)
    return HostLoad(
        dom0_util=u.dom0_util,
        dom0_weight=snap.dom0_weight.astype(float) if snap.dom0_weight is not None else np.full(n, np.nan),
        guest_weight_mean=weight_mean,
        cpu_capacity=snap.host_cores.astype(float),
        cpu_demand=total("cpu_demand"),
        disk_bs=total("disk_bs"),
        net_tx_bs=total("net_tx_bs"),
        net_rx_bs=total("net_rx_bs"),
        disk_queue=total("disk_queue"),
        nic_capacity=snap.nic_bandwidth.astype(float),
        net_tx_demand=total("net_tx_demand"),
        net_rx_demand=total("net_rx_demand"),
    )


def vm_load(terms: dict[str, np.ndarray], vm: int) -> VmLoad:
    """One VM's terms, to add to another host's load (what if it ran there?)."""
    return VmLoad(**{key: float(values[vm]) for key, values in terms.items()})
