"""What the simulated hosts' sensors count: per-VM CPU, network and block counters, per-host CPU, NIC
bytes and energy, as the libvirt, /proc/net/dev and XenMon counters the driver reads are cumulative.

The counters are rows of one per-VM and one per-host array, so that a tick adds the fabric step's share
of all of them in one operation; ``counters`` names each row. A part of ``Simulator`` (sim/engine.py).
"""

from __future__ import annotations

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
)
PACKET_COUNTERS = ("guest_tx_packets", "guest_rx_packets", "vnic_tx_packets", "vnic_rx_packets")
BLOCK_COUNTERS = ("blk_rd_ops", "blk_wr_ops", "blk_rd_bytes", "blk_wr_bytes", "blk_time")
VM_COUNTERS = FABRIC_VM_COUNTERS + PACKET_COUNTERS + BLOCK_COUNTERS
HOST_COUNTERS = ("host_cpu_time", "dom0_cpu_time", "nic_tx_bytes", "nic_rx_bytes")
# the rows of FABRIC_VM_COUNTERS the packet counters follow, in their order
_BYTES = slice(FABRIC_VM_COUNTERS.index("guest_tx_bytes"), FABRIC_VM_COUNTERS.index("vnic_rx_bytes") + 1)
_PACKETS = slice(len(FABRIC_VM_COUNTERS), len(FABRIC_VM_COUNTERS) + len(PACKET_COUNTERS))
BLOCK_ROWS = slice(_PACKETS.stop, len(VM_COUNTERS))  # the rows a storage epoch adds to


class Sensors:
    """The accounting part of the simulator: the fabric step's counts, added in parts over its ticks."""

    def _init_counters(self) -> None:
        """Sensor counters, as rows of two arrays (per VM, per host) so that a tick adds them at once;
        ``counters`` names each row."""
        self._vm_counts = np.zeros((len(VM_COUNTERS), self.n_vms))
        self._host_counts = np.zeros((len(HOST_COUNTERS) + 1, self.n_hosts))  # the last row: energy
        self.counters = {name: self._vm_counts[i] for i, name in enumerate(VM_COUNTERS)}
        self.counters |= {name: self._host_counts[i] for i, name in enumerate(HOST_COUNTERS)}
        self.energy_j = self._host_counts[-1]
        # SLA accounting (Beloglazov and Buyya's SLATAH and PDM): per host, seconds active (with a VM) and
        # seconds it gave its VMs less CPU than they asked; per VM, the CPU asked (core-seconds) and the
        # part lost to migrations (10 % of what it asked while migrating, as the paper estimates it)
        self.host_active_s = np.zeros(self.n_hosts)
        self.host_short_s = np.zeros(self.n_hosts)
        self.vm_cpu_asked = np.zeros(self.n_vms)
        self.vm_migration_loss = np.zeros(self.n_vms)
        self.migrating_s = np.zeros(self.n_vms)  # per fabric step: seconds each VM was migrating
        self.flow_bytes = np.zeros(len(self.flows))
        # last step's gauges, for the recorder
        self.gauges: dict[str, np.ndarray] = {}

    def _account(self, rate, vm_alloc, vm_dem, dom0_alloc, stretch, dt, ran_on) -> None:
        """What the sensors count over the fabric step (added in even parts over its ticks), and gauges.
        `ran_on`: each VM's host during the step (a migration that ended in it moved the VM after)."""
        got = vm_alloc * dt
        want = np.minimum(vm_dem, self.vm_vcpus)
        self._account_sla(want, vm_alloc, dt, ran_on)
        wait = np.minimum((want - vm_alloc) * dt + got * (stretch[ran_on] - 1), self.vm_vcpus * dt - got)
        blocked = np.where(self.vm_present, np.maximum(self.vm_vcpus * dt - got - wait, 0.0), 0.0)
        nbytes = np.where(np.isfinite(rate), rate, 0.0) * dt / 8
        src_vm, dst_vm = self._flow_vm_ends()
        per_vm = np.empty((len(FABRIC_VM_COUNTERS), self.n_vms))
        per_vm[0], per_vm[1], per_vm[2] = got, wait, blocked
        row = 3
        for path in ("guest", "vnic"):
            for end, pv in ((src_vm, self.flow_src_pv), (dst_vm, self.flow_dst_pv)):
                m = (end >= 0) if path == "guest" else (end >= 0) & pv
                per_vm[row] = np.bincount(end[m], weights=nbytes[m], minlength=self.n_vms)
                row += 1
        lay = self.layout
        load_bytes = np.bincount(self._entry_res, weights=nbytes[self._entry_flow], minlength=lay.size)
        host_busy = np.bincount(ran_on, weights=vm_alloc, minlength=self.n_hosts) + dom0_alloc
        util = host_busy / self.host_cores
        power = self.power.draw(util, dt, self.t)
        per_host = np.empty((len(HOST_COUNTERS) + 1, self.n_hosts))
        per_host[0], per_host[1], per_host[4] = host_busy * dt, dom0_alloc * dt, power * dt
        per_host[2], per_host[3] = load_bytes[lay.nic_tx : lay.nic_rx], load_bytes[lay.nic_rx : lay.dom0]
        if self.vm_down.any() or self.host_failed.any():  # nothing counts on a crashed host or a down VM
            per_vm[:, self.vm_down] = 0.0
            per_host[: len(HOST_COUNTERS), self.host_failed] = 0.0
        self._window = (per_vm, per_host, nbytes)
        self.gauges.update(
            host_util=util, dom0_alloc=dom0_alloc, vm_alloc=vm_alloc, vm_demand=vm_dem, power=power, rate=rate
        )

    def _account_sla(self, want: np.ndarray, vm_alloc: np.ndarray, dt: float, ran_on: np.ndarray) -> None:
        """A fabric step's share of SLATAH's and PDM's times and CPU."""
        running = self.vm_present & ~self.vm_down
        asked = np.where(running, want, 0.0)
        active = np.bincount(ran_on, weights=running, minlength=self.n_hosts) > 0
        short = np.bincount(ran_on, weights=asked - np.where(self.vm_present, vm_alloc, 0.0), minlength=self.n_hosts)
        self.host_active_s += active * dt
        self.host_short_s += (active & (short > 1e-6 * self.host_cores)) * dt
        self.vm_cpu_asked += asked * dt
        self.vm_migration_loss += 0.1 * asked * self.migrating_s  # to the second, also within a long step

    def _add_window(self, part: float) -> None:
        """Add `part` of the fabric step's counts to the counters."""
        per_vm, per_host, nbytes = self._window
        self._vm_counts[: len(FABRIC_VM_COUNTERS)] += per_vm * part
        self._host_counts += per_host * part
        self.flow_bytes[: len(nbytes)] += nbytes * part
        # whole packets, from the cumulative bytes so rounding never accumulates
        self._vm_counts[_PACKETS] = np.ceil(self._vm_counts[_BYTES] / (self.pkt_bits / 8) - 1e-6)
