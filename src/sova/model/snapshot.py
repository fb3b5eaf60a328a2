"""What the sensors of real hosts report: the only view of the data center policies get.

Counters are cumulative (as libvirt, /proc/net/dev and Open vSwitch report them); rates come from
differences between snapshots (``counter_rate``). Nothing here is simulator-only: every field
has a real source, named in its comment.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class VmRequest:
    """A VM asked for and not yet placed: what a scheduler needs to choose its host (Nova's request
    spec: flavor, and whether it needs an SR-IOV port)."""

    name: str
    vcpus: int
    memory: float  # MiB
    vf: bool  # wants an SR-IOV VF
    since: float  # s on the driver's clock: when it was asked for


@dataclass(frozen=True)
class VmCounters:
    """Per-VM cumulative counters, arrays indexed like ``Snapshot.vms``."""

    cpu_time: np.ndarray  # s; libvirt cpu_time / XenMon gotten time
    wait_time: np.ndarray  # s; runnable but not running (XenMon waiting, libvirt vcpu.wait/delay)
    blocked_time: np.ndarray  # s; idle or blocked on I/O (XenMon blocked)
    vnic_rx_bytes: np.ndarray  # bytes; the vNIC as Dom0 sees it (libvirt interfaceStats)
    vnic_tx_bytes: np.ndarray
    vnic_rx_packets: np.ndarray
    vnic_tx_packets: np.ndarray
    guest_rx_bytes: np.ndarray  # bytes; the guest's /proc/net/dev over all its NICs (gray-box daemon)
    guest_tx_bytes: np.ndarray
    guest_rx_packets: np.ndarray
    guest_tx_packets: np.ndarray
    blk_rd_ops: np.ndarray  # libvirt blockStats
    blk_wr_ops: np.ndarray
    blk_rd_bytes: np.ndarray
    blk_wr_bytes: np.ndarray
    blk_time: np.ndarray  # s; total time of completed IOs (blockStats rd/wr_total_times)
    # bytes the guest would have sent and received had nothing but its own path held it back (CloudScope's
    # demand): the simulator's flows on their paths alone; libvirt: the carried bytes, or the VM's path alone
    # while its guest agent saw its TCP senders held back (docs/libvirt.md)
    guest_tx_wanted: np.ndarray
    guest_rx_wanted: np.ndarray


@dataclass(frozen=True)
class Snapshot:
    """One observation of the whole cluster at ``time`` (seconds on the driver's clock)."""

    time: float
    hosts: tuple[str, ...]
    vms: tuple[str, ...]
    host_cores: np.ndarray  # hardware threads
    host_memory: np.ndarray  # MiB available to guests
    host_cpu_time: np.ndarray  # s; all domains incl. Dom0 (cumulative)
    dom0_cpu_time: np.ndarray  # s
    dom0_vcpus: np.ndarray
    nic_bandwidth: np.ndarray  # bit/s of the physical port
    nic_rx_bytes: np.ndarray  # cumulative, physical NIC
    nic_tx_bytes: np.ndarray
    vfs_total: np.ndarray  # VFs the NIC offers (0 without SR-IOV)
    vfs_used: np.ndarray
    vm_host: np.ndarray  # index into hosts
    vm_vcpus: np.ndarray
    vm_memory: np.ndarray  # MiB configured
    vm_memory_used: np.ndarray  # MiB in use (guest /proc/meminfo via the daemon or the balloon)
    vm_dirty_rate: np.ndarray  # bytes/s (libvirt domain dirty-rate calculation)
    vm_weight: np.ndarray
    vm_cap: np.ndarray
    vm_nic: tuple[str, ...]  # 'vnic' | 'vf'; 'attaching'/'detaching' while a hot-plug is in progress
    vm_vf_rate: np.ndarray  # bit/s cap of the VF (0: none)
    vm_migrating: np.ndarray  # bool: a migration of this VM is in flight
    counters: VmCounters
    flow_src: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # VM index
    flow_dst: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # VM index, -1 outside
    flow_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0))  # cumulative (OVS flow counters)
    # Dom0's scheduler weight (Xen credit; KVM: its guests' I/O-thread quota as a weight), NaN where unknown
    dom0_weight: np.ndarray | None = None
    # per VM: its disks are files or block devices of its host, whose IO does not cross the NIC (libvirt's
    # disk type 'file' or 'block'); None: unknown, taken as network storage (iSCSI, RBD, NFS)
    vm_disk_local: np.ndarray | None = None
    # per host: MIPS of one core at full speed (libvirt nodeinfo MHz; 1 MHz ~ 1 MIPS); None: unknown
    host_core_mips: np.ndarray | None = None
    # per host: 'on', 'sleep', 'off' or 'waking' (IPMI chassis power, or the host answering); None: all on
    host_power: tuple[str, ...] | None = None
    # per host: watts at 0, 10, ..., 100 % CPU (the inventory's power model), hosts x 11; None: unknown
    host_power_curve: np.ndarray | None = None
    # per VM: MiB it holds on its host now, where that is not its configured memory (a simulator whose running
    # VMs hold none, as CloudSim's); None: its configured memory, as on any real host
    vm_memory_held: np.ndarray | None = None
    # per VM: MIPS of each of its vCPUs at full speed where the driver knows it (the simulator: the scenario's
    # `mips`, 0 where it states none); None: unknown, as libvirt does not say
    vm_mips: np.ndarray | None = None
    # per host: the driver's time of its latest report (a host that stopped reporting keeps its last one, and
    # its VMs are shown as it last saw them); None: every host reported for this snapshot
    host_seen: np.ndarray | None = None

    @functools.cached_property
    def vm_position(self) -> dict[str, int]:
        """Index of each VM by name: a dictionary, as the executor's rails look many up per action."""
        return {name: i for i, name in enumerate(self.vms)}

    @functools.cached_property
    def host_position(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.hosts)}

    def hosts_on(self) -> np.ndarray:
        """Per host: it is on and can run VMs (all hosts where the driver reports no power states)."""
        if self.host_power is None:
            return np.ones(len(self.hosts), dtype=bool)
        return np.array([state == "on" for state in self.host_power], dtype=bool)

    def memory_held(self) -> np.ndarray:
        """Per VM: MiB it holds on its host, and would hold on another it moved to (its configured memory
        unless the driver says otherwise)."""
        return self.vm_memory if self.vm_memory_held is None else self.vm_memory_held

    def committed_memory(self) -> np.ndarray:
        """Per host: MiB committed to its VMs (the memory they hold)."""
        return np.bincount(self.vm_host, weights=self.memory_held(), minlength=len(self.hosts))


def counter_rate(
    old: Snapshot, new: Snapshot, counter: str, scale: float = 1.0, per: np.ndarray | float = 1.0
) -> np.ndarray:
    """How fast a cumulative counter grew from `old` to `new` (old indexed like new): its growth times
    `scale` (8: bytes to bits) over the seconds between them times `per` (a capacity, for a utilisation).
    `counter` names a field of the Snapshot (a host's) or of its VmCounters (a VM's). A counter that went
    back (a domain rebooted, an agent restarted) grew by nothing."""
    before, after = (
        getattr(snap, counter) if hasattr(snap, counter) else getattr(snap.counters, counter) for snap in (old, new)
    )
    return np.maximum(after - before, 0.0) * scale / ((new.time - old.time) * per)
