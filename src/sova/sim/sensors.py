"""What the simulated hosts' sensors count: per-VM CPU, network and block counters, per-host CPU, NIC
bytes and energy, as the libvirt, /proc/net/dev and XenMon counters the driver reads are cumulative.

The counters are rows of one per-VM and one per-host array, so that a tick adds the fabric step's share
of all of them in one operation; ``counters`` names each row. A subsystem of ``Simulator`` (sim/engine.py)
that owns its state: the engine hands it what a fabric step used (``count_step``) and each tick's part
(``add_part``), the storage subsystem each epoch's block counts (``add_block``); the ``sim`` driver reads
``counters`` and ``flow_bytes``, the experiment the SLA times, the energy and the gauges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# per-VM counters: what the fabric's step counts (added in parts over its ticks), the packets that follow
# from its bytes, and what each storage epoch counts
FABRIC_VM_COUNTERS = (
    "cpu_time",
    "wait_time",
    "blocked_time",
    "guest_tx_bytes",
    "guest_rx_bytes",
    "vnic_tx_bytes",
    "vnic_rx_bytes",
    "guest_tx_wanted",
    "guest_rx_wanted",
)
PACKET_COUNTERS = ("guest_tx_packets", "guest_rx_packets", "vnic_tx_packets", "vnic_rx_packets")
BLOCK_COUNTERS = ("blk_rd_ops", "blk_wr_ops", "blk_rd_bytes", "blk_wr_bytes", "blk_time")
VM_COUNTERS = FABRIC_VM_COUNTERS + PACKET_COUNTERS + BLOCK_COUNTERS
HOST_COUNTERS = ("host_cpu_time", "dom0_cpu_time", "nic_tx_bytes", "nic_rx_bytes")
# the rows of FABRIC_VM_COUNTERS the packet counters follow, in their order
_BYTES = slice(FABRIC_VM_COUNTERS.index("guest_tx_bytes"), FABRIC_VM_COUNTERS.index("vnic_rx_bytes") + 1)
_WANTED = slice(FABRIC_VM_COUNTERS.index("guest_tx_wanted"), FABRIC_VM_COUNTERS.index("guest_rx_wanted") + 1)
_PACKETS = slice(len(FABRIC_VM_COUNTERS), len(FABRIC_VM_COUNTERS) + len(PACKET_COUNTERS))
BLOCK_ROWS = slice(_PACKETS.stop, len(VM_COUNTERS))  # the rows a storage epoch adds to


@dataclass(frozen=True)
class StepUse:
    """What one fabric step used, as the sensors see it (per VM, per host, per flow)."""

    dt: float
    vm_alloc: np.ndarray  # cores each VM got
    vm_demand: np.ndarray  # cores each VM asked, bounded by its cap
    vcpus: np.ndarray  # each VM's vCPUs
    stretch: np.ndarray  # per VM: its host's slowdown of work (run queue, hyper-thread siblings)
    ran_on: np.ndarray  # each VM's host during the step (a migration that ended in it moved the VM after)
    present: np.ndarray  # per VM: there (arrived, not deleted)
    down: np.ndarray  # per VM: down on a crashed host, or booting
    host_failed: np.ndarray  # per host: crashed
    flow_rate: np.ndarray  # bit/s each flow carried
    flow_bytes: np.ndarray  # bytes each flow carried
    vm_bytes: np.ndarray  # 4 x VMs: guest tx, guest rx, vNIC tx, vNIC rx bytes
    vm_wanted_bytes: np.ndarray  # 2 x VMs: bytes the guest's flows would have sent, received on their own paths
    nic_bytes: np.ndarray  # 2 x hosts: NIC tx, rx bytes
    dom0_alloc: np.ndarray  # cores each host's Dom0 got
    host_busy: np.ndarray  # cores busy on each host, Dom0's included
    host_util: np.ndarray  # host_busy over the host's cores
    power: np.ndarray  # each host's mean watts over the step
    host_cores: np.ndarray
    migrating_s: np.ndarray  # per VM: seconds of the step it was migrating
    # CloudSim's migration model: (hosts, active s, short s) of the hosts its migrations touched, charged
    # piece by piece (sim/step_moves.py) instead of whole-step
    moved_hosts_sla: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


class Sensors:
    """The accounting of the simulator: the fabric step's counts, added in parts over its ticks."""

    def __init__(self, n_hosts: int, n_vms: int, n_flows: int):
        self.n_hosts, self.n_vms = n_hosts, n_vms
        self._vm_counts = np.zeros((len(VM_COUNTERS), n_vms))
        self._host_counts = np.zeros((len(HOST_COUNTERS) + 1, n_hosts))  # the last row: energy
        self.counters = {name: self._vm_counts[i] for i, name in enumerate(VM_COUNTERS)}
        self.counters |= {name: self._host_counts[i] for i, name in enumerate(HOST_COUNTERS)}
        self.energy_j = self._host_counts[-1]
        # SLA accounting (Beloglazov and Buyya's SLATAH and PDM): per host, seconds active (with a VM) and
        # seconds it gave its VMs less CPU than they asked; per VM, the CPU asked (core-seconds) and the
        # part lost to migrations (10 % of what it asked while migrating, as the paper estimates it)
        self.host_active_s = np.zeros(n_hosts)
        self.host_short_s = np.zeros(n_hosts)
        self.vm_cpu_asked = np.zeros(n_vms)
        self.vm_migration_loss = np.zeros(n_vms)
        self.flow_bytes = np.zeros(n_flows)  # cumulative, per flow (Open vSwitch's flow counters)
        self.gauges: dict[str, np.ndarray] = {}  # the last step's gauges, for the recorder
        self._step: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def add_flows(self, n_flows: int) -> None:
        """Counters for the flows added since (migrations' flows), from nothing."""
        self.flow_bytes = np.concatenate([self.flow_bytes, np.zeros(n_flows - len(self.flow_bytes))])

    def count_step(self, use: StepUse) -> None:
        """What the sensors count over the fabric step (added in even parts over its ticks, ``add_part``),
        and gauges."""
        dt, vm_alloc, vcpus = use.dt, use.vm_alloc, use.vcpus
        got = vm_alloc * dt
        want = np.minimum(use.vm_demand, vcpus)
        self._count_sla(want, use)
        wait = np.minimum((want - vm_alloc) * dt + got * (use.stretch - 1), vcpus * dt - got)
        blocked = np.where(use.present, np.maximum(vcpus * dt - got - wait, 0.0), 0.0)
        per_vm = np.empty((len(FABRIC_VM_COUNTERS), self.n_vms))
        per_vm[0], per_vm[1], per_vm[2] = got, wait, blocked
        per_vm[_BYTES], per_vm[_WANTED] = use.vm_bytes, use.vm_wanted_bytes
        per_host = np.empty((len(HOST_COUNTERS) + 1, self.n_hosts))
        per_host[0], per_host[1], per_host[4] = use.host_busy * dt, use.dom0_alloc * dt, use.power * dt
        per_host[2], per_host[3] = use.nic_bytes
        if use.down.any() or use.host_failed.any():  # nothing counts on a crashed host or a down VM
            per_vm[:, use.down] = 0.0
            per_host[: len(HOST_COUNTERS), use.host_failed] = 0.0
        self._step = (per_vm, per_host, use.flow_bytes)
        self.gauges.update(
            host_util=use.host_util,
            dom0_alloc=use.dom0_alloc,
            vm_alloc=vm_alloc,
            vm_demand=use.vm_demand,
            power=use.power,
            rate=use.flow_rate,
        )

    def _count_sla(self, want: np.ndarray, use: StepUse) -> None:
        """A fabric step's share of SLATAH's and PDM's times and CPU."""
        running = use.present & ~use.down
        asked = np.where(running, want, 0.0)
        active = np.bincount(use.ran_on, weights=running, minlength=self.n_hosts) > 0
        given = np.where(use.present, use.vm_alloc, 0.0)
        short = np.bincount(use.ran_on, weights=asked - given, minlength=self.n_hosts)
        active_s = active * use.dt
        short_s = (active & (short > 1e-6 * use.host_cores)) * use.dt
        if use.moved_hosts_sla is not None:
            hosts, active_s[hosts], short_s[hosts] = use.moved_hosts_sla
        self.host_active_s += active_s
        self.host_short_s += short_s
        self.vm_cpu_asked += asked * use.dt
        self.vm_migration_loss += 0.1 * asked * use.migrating_s  # to the second, also within a long step

    def add_part(self, part: float, packet_bytes: float) -> None:
        """Add `part` of the fabric step's counts to the counters."""
        per_vm, per_host, nbytes = self._step
        self._vm_counts[: len(FABRIC_VM_COUNTERS)] += per_vm * part
        self._host_counts += per_host * part
        self.flow_bytes[: len(nbytes)] += nbytes * part
        # whole packets, from the cumulative bytes so rounding never accumulates
        self._vm_counts[_PACKETS] = np.ceil(self._vm_counts[_BYTES] / packet_bytes - 1e-6)

    def add_block(self, counts: np.ndarray) -> None:
        """A storage epoch's block counts (rows of BLOCK_COUNTERS x VMs)."""
        self._vm_counts[BLOCK_ROWS] += counts
