"""The ``sim`` driver: the built-in simulator behind the driver seam.

``observe`` copies only sensor counters and configuration a real host exposes; ``apply`` turns
actions into simulator operations and reports refusals as failed outcomes, never as exceptions.
"""

from __future__ import annotations

import numpy as np

from sova.drivers.last_report import held_for_silent_hosts
from sova.drivers.sim_actions import SIM_HANDLERS
from sova.model.actions import FAILED, OK, Action, Outcome
from sova.model.io_sample import IoSample, IoThrottle
from sova.model.snapshot import Snapshot, VmCounters, VmRequest
from sova.sim.datapath import VM
from sova.sim.engine import Simulator
from sova.sim.records import SimError


class SimDriver:
    """Drives a Simulator; the runner advances the simulator's clock."""

    def __init__(self, sim: Simulator):
        self.sim = sim
        self._vm = {n: i for i, n in enumerate(sim.vm_names)}
        self._host = {n: i for i, n in enumerate(sim.host_names)}
        self._hosts = tuple(sim.host_names)  # shared, as the VM names: equal snapshots compare by identity
        # VM-to-VM and VM-to-outside flows are the workloads': fixed for the run (only migration flows,
        # which start and end in Dom0, come and go), so their endpoints are read once
        self._all_vm_flows = np.array(
            [i for i, f in enumerate(sim.network.flows) if f.src[0] == VM and f.kind != "io"], dtype=np.int64
        )
        self._all_flow_src = np.array([sim.network.flows[f].src[1] for f in self._all_vm_flows], dtype=np.int64)
        self._all_flow_dst = np.array(
            [sim.network.flows[f].dst[1] if sim.network.flows[f].dst[0] == VM else -1 for f in self._all_vm_flows],
            dtype=np.int64,
        )
        self._inventory = -1
        self._list_inventory()
        self._heard: Snapshot | None = None  # the last snapshot, whose rows a silent host keeps showing

    def _list_inventory(self) -> None:
        """The VMs there now and the flows between them, re-read only when a VM came or went."""
        sim = self.sim
        if self._inventory == sim.vms.version:
            return
        self._inventory = sim.vms.version
        self._present = None if sim.vms.present.all() else np.flatnonzero(sim.vms.present)
        if self._present is None:
            self._vms = tuple(sim.vm_names)
            self._vm_flows, self._flow_src, self._flow_dst = self._all_vm_flows, self._all_flow_src, self._all_flow_dst
            return
        self._vms = tuple(sim.vm_names[v] for v in self._present)
        position = np.full(sim.n_vms, -1, dtype=np.int64)
        position[self._present] = np.arange(len(self._present))
        src, dst = self._all_flow_src, self._all_flow_dst
        keep = sim.vms.present[src] & ((dst < 0) | sim.vms.present[np.maximum(dst, 0)])
        self._vm_flows = self._all_vm_flows[keep]
        self._flow_src = position[src[keep]]
        self._flow_dst = np.where(dst[keep] >= 0, position[np.maximum(dst[keep], 0)], -1)

    def now(self) -> float:
        return self.sim.t

    def _indices(self, vms) -> np.ndarray:
        key = tuple(vms)
        if getattr(self, "_io_key", None) != key:
            self._io_key, self._io_index = (
                key,
                np.array([self.vm_index(v, present=False) for v in key], dtype=np.int64),
            )
        return self._io_index

    def io_sample(self, vms) -> IoSample:
        sensed, idx = self.sim.sensors.counters, self._indices(vms)
        return IoSample(
            self.sim.t,
            sensed["blk_rd_ops"][idx] + sensed["blk_wr_ops"][idx],
            sensed["blk_rd_bytes"][idx] + sensed["blk_wr_bytes"][idx],
            sensed["blk_time"][idx].copy(),
        )

    def set_io_throttle(self, throttle: IoThrottle) -> None:
        self.sim.storage.set_throttle(self._indices(throttle.vms), throttle)

    def observe(self) -> Snapshot:
        snap = self._observe()
        silent = ~self.sim.faults.reporting(self.sim.t) & ~self.sim.faults.failed
        if silent.any() and self._heard is not None:
            snap = held_for_silent_hosts(snap, self._heard, silent)
        self._heard = snap
        return snap

    def _observe(self) -> Snapshot:
        sim = self.sim
        self._list_inventory()
        sensed = sim.sensors.counters
        nic = np.where(sim.vms.on_vf, "vf", "vnic").astype(object)
        for vm, state in sim.vfs.plugging.items():  # a hot-plug in progress: 'attaching' or 'detaching'
            nic[vm] = state
        migrating = np.zeros(sim.n_vms, dtype=bool)
        migrating[list(sim.migrations.under_way)] = True
        there = self._present
        pick = (lambda a: a.copy()) if there is None else (lambda a: a[there])  # per-VM arrays of the VMs there
        counters = VmCounters(**{k: pick(sensed[k]) for k in VmCounters.__dataclass_fields__})
        return Snapshot(
            time=sim.t,
            hosts=self._hosts,
            vms=self._vms,
            host_cores=sim.compute.host_cores.copy(),
            host_memory=sim.vms.host_memory.copy(),
            host_cpu_time=sensed["host_cpu_time"].copy(),
            dom0_cpu_time=sensed["dom0_cpu_time"].copy(),
            dom0_vcpus=sim.compute.dom0_vcpus.copy(),
            dom0_weight=sim.compute.dom0_weight.copy(),
            nic_bandwidth=sim.network.nic_bw.copy(),
            nic_rx_bytes=sensed["nic_rx_bytes"].copy(),
            nic_tx_bytes=sensed["nic_tx_bytes"].copy(),
            vfs_total=sim.vfs.offered.copy(),
            vfs_used=sim.vfs.used.copy(),
            vm_host=pick(sim.vms.host),
            vm_vcpus=pick(sim.compute.vm_vcpus),
            vm_memory=pick(sim.vms.memory),
            vm_memory_used=pick(sim.vms.memory_used),
            vm_memory_held=None if sim.params["vm_memory"] == "held" else pick(sim.memory_held()),
            vm_mips=pick(sim.compute.vm_mips),
            vm_dirty_rate=pick(sim.vms.dirty_rate),
            vm_weight=pick(sim.compute.vm_weight),
            vm_cap=pick(sim.compute.vm_cap),
            vm_nic=tuple(pick(nic)),
            vm_vf_rate=pick(np.where(sim.vms.on_vf, sim.vfs.rate, 0.0)),
            vm_migrating=pick(migrating),
            counters=counters,
            flow_src=self._flow_src,
            flow_dst=self._flow_dst,
            flow_bytes=sim.sensors.flow_bytes[self._vm_flows],
            host_core_mips=sim.compute.host_core_mips,
            host_power=sim.power.state_names(),
            host_power_curve=sim.power.curve,
            host_seen=sim.faults.seen.copy(),
        )

    def requests(self) -> list[VmRequest]:
        """VMs that arrived without a host and wait for the admission policy, oldest first."""
        sim = self.sim
        return [
            VmRequest(
                sim.vm_names[vm],
                int(sim.compute.vm_vcpus[vm]),
                float(sim.vms.memory[vm]),
                bool(sim.vms.on_vf[vm]),
                since,
            )
            for vm, since in sorted(sim.lifecycle.waiting.items(), key=lambda item: (item[1], item[0]))
        ]

    def vm_index(self, name: str, present: bool = True) -> int:
        """The VM's row; one that is not running (not arrived, or deleted) is refused unless `present` is
        False (creating it)."""
        if name not in self._vm:
            raise SimError(f"no VM named {name!r}")
        vm = self._vm[name]
        if present:
            self.sim.require_running(vm)
        return vm

    def host_index(self, name: str) -> int:
        if name not in self._host:
            raise SimError(f"no host named {name!r}")
        return self._host[name]

    def apply(self, action: Action) -> Outcome:
        """Carry the action out through its kind's handler (``sim_actions``); a refusal is a failed outcome."""
        now = self.sim.t
        try:
            return SIM_HANDLERS.of(action).apply(self, action) or Outcome(OK, "applied", started=now, finished=now)
        except SimError as exc:
            return Outcome(FAILED, str(exc), started=now, finished=now)

    def poll(self, action: Action) -> Outcome:
        return SIM_HANDLERS.of(action).poll(self, action)

    def cancel(self, action: Action) -> Outcome:
        return SIM_HANDLERS.of(action).cancel(self, action)
