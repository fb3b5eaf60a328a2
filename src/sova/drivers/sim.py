"""The ``sim`` driver: the built-in simulator behind the driver seam.

``observe`` copies only sensor counters and configuration a real host exposes; ``apply`` turns
actions into simulator operations and reports refusals as failed outcomes, never as exceptions.
"""

from __future__ import annotations

import numpy as np

from sova.drivers.last_report import held_for_silent_hosts
from sova.model import actions as A
from sova.model.io_sample import IoSample, IoThrottle
from sova.model.snapshot import Snapshot, VmCounters, VmRequest
from sova.sim.datapath import VM
from sova.sim.engine import Simulator
from sova.sim.host_power import STATE_NAMES
from sova.sim.records import SimError


class SimDriver:
    """Drives a Simulator; the runner advances the simulator's clock."""

    def __init__(self, sim: Simulator):
        self.sim = sim
        self._vm = {n: i for i, n in enumerate(sim.vm_names)}
        self._host = {n: i for i, n in enumerate(sim.host_names)}
        self._hosts = tuple(sim.host_names)  # shared, as the VM names: equal snapshots compare by identity
        self._started: dict[int, float] = {}
        # VM-to-VM and VM-to-outside flows are the workloads': fixed for the run (only migration flows,
        # which start and end in Dom0, come and go), so their endpoints are read once
        self._all_vm_flows = np.array(
            [i for i, f in enumerate(sim.flows) if f.src[0] == VM and f.kind != "io"], dtype=np.int64
        )
        self._all_flow_src = np.array([sim.flows[f].src[1] for f in self._all_vm_flows], dtype=np.int64)
        self._all_flow_dst = np.array(
            [sim.flows[f].dst[1] if sim.flows[f].dst[0] == VM else -1 for f in self._all_vm_flows], dtype=np.int64
        )
        self._inventory = -1
        self._list_inventory()
        self._heard: Snapshot | None = None  # the last snapshot, whose rows a silent host keeps showing

    def _list_inventory(self) -> None:
        """The VMs there now and the flows between them, re-read only when a VM came or went."""
        s = self.sim
        if self._inventory == s.inventory_version:
            return
        self._inventory = s.inventory_version
        self._present = None if s.vm_present.all() else np.flatnonzero(s.vm_present)
        if self._present is None:
            self._vms = tuple(s.vm_names)
            self._vm_flows, self._flow_src, self._flow_dst = self._all_vm_flows, self._all_flow_src, self._all_flow_dst
            return
        self._vms = tuple(s.vm_names[v] for v in self._present)
        position = np.full(s.V, -1, dtype=np.int64)
        position[self._present] = np.arange(len(self._present))
        src, dst = self._all_flow_src, self._all_flow_dst
        keep = s.vm_present[src] & ((dst < 0) | s.vm_present[np.maximum(dst, 0)])
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
                np.array([self._vm_index(v, present=False) for v in key], dtype=np.int64),
            )
        return self._io_index

    def io_sample(self, vms) -> IoSample:
        c, idx = self.sim.counters, self._indices(vms)
        return IoSample(
            self.sim.t,
            c["blk_rd_ops"][idx] + c["blk_wr_ops"][idx],
            c["blk_rd_bytes"][idx] + c["blk_wr_bytes"][idx],
            c["blk_time"][idx].copy(),
        )

    def set_io_throttle(self, throttle: IoThrottle) -> None:
        idx, controls = self._indices(throttle.vms), self.sim.vm_io
        controls.limit[idx] = throttle.iops
        controls.size_limit[idx] = throttle.size
        if throttle.reservation is not None or throttle.weight is not None:  # rows: reservation, weight, on bytes
            controls.tags[0, idx] = 0.0 if throttle.reservation is None else throttle.reservation
            controls.tags[1, idx] = 0.0 if throttle.weight is None else throttle.weight
            controls.tags[2, idx] = float(throttle.weight_on_bytes)
        if throttle.in_flight is not None:
            controls.in_flight[idx] = throttle.in_flight

    def observe(self) -> Snapshot:
        snap = self._observe()
        silent = ~self.sim.reporting() & ~self.sim.host_failed
        if silent.any() and self._heard is not None:
            snap = held_for_silent_hosts(snap, self._heard, silent)
        self._heard = snap
        return snap

    def _observe(self) -> Snapshot:
        s = self.sim
        self._list_inventory()
        c = s.counters
        nic = np.where(s.vm_vf, "vf", "vnic").astype(object)
        for vm, state in s.vf_plugging.items():  # a hot-plug in progress: 'attaching' or 'detaching'
            nic[vm] = state
        migrating = np.zeros(s.V, dtype=bool)
        migrating[list(s.migrations)] = True
        there = self._present
        pick = (lambda a: a.copy()) if there is None else (lambda a: a[there])  # per-VM arrays of the VMs there
        counters = VmCounters(**{k: pick(c[k]) for k in VmCounters.__dataclass_fields__})
        return Snapshot(
            time=s.t,
            hosts=self._hosts,
            vms=self._vms,
            host_cores=s.host_cores.copy(),
            host_memory=s.host_mem.copy(),
            host_cpu_time=c["host_cpu_time"].copy(),
            dom0_cpu_time=c["dom0_cpu_time"].copy(),
            dom0_vcpus=s.dom0_vcpus.copy(),
            dom0_weight=s.dom0_weight.copy(),
            nic_bandwidth=s.nic_bw.copy(),
            nic_rx_bytes=c["nic_rx_bytes"].copy(),
            nic_tx_bytes=c["nic_tx_bytes"].copy(),
            vfs_total=s.max_vfs.copy(),
            vfs_used=s.vf_used.copy(),
            vm_host=pick(s.vm_host),
            vm_vcpus=pick(s.vm_vcpus),
            vm_memory=pick(s.vm_mem),
            vm_memory_used=pick(s.vm_mem_used),
            vm_dirty_rate=pick(s.vm_dirty),
            vm_weight=pick(s.vm_weight),
            vm_cap=pick(s.vm_cap),
            vm_nic=tuple(pick(nic)),
            vm_vf_rate=pick(np.where(s.vm_vf, s.vm_vf_rate, 0.0)),
            vm_migrating=pick(migrating),
            counters=counters,
            flow_src=self._flow_src,
            flow_dst=self._flow_dst,
            flow_bytes=s.flow_bytes[self._vm_flows],
            host_core_mips=s.host_core_mips,
            host_power=tuple(STATE_NAMES[state] for state in s.host_state),
            host_power_curve=s.power_curve,
            host_seen=s.host_seen.copy(),
        )

    def requests(self) -> list[VmRequest]:
        """VMs that arrived without a host and wait for the admission policy, oldest first."""
        s = self.sim
        return [
            VmRequest(s.vm_names[vm], int(s.vm_vcpus[vm]), float(s.vm_mem[vm]), bool(s.vm_vf[vm]), since)
            for vm, since in sorted(s.waiting.items(), key=lambda item: (item[1], item[0]))
        ]

    def _vm_index(self, name: str, present: bool = True) -> int:
        """The VM's row; one that is not running (not arrived, or deleted) is refused unless `present` is
        False (creating it)."""
        if name not in self._vm:
            raise SimError(f"no VM named {name!r}")
        vm = self._vm[name]
        if present:
            self.sim.require_running(vm)
        return vm

    def _host_index(self, name: str) -> int:
        if name not in self._host:
            raise SimError(f"no host named {name!r}")
        return self._host[name]

    def apply(self, action: A.Action) -> A.Outcome:
        s, now = self.sim, self.sim.t
        try:
            if isinstance(action, A.Migrate):
                vm = self._vm_index(action.vm)
                s.start_migration(vm, self._host_index(action.dst))
                self._started[vm] = now
                return A.Outcome(A.RUNNING, f"migrating {action.vm} to {action.dst}", started=now)
            if isinstance(action, A.AttachVF):
                s.attach_vf(self._vm_index(action.vm), action.rate)
                return A.Outcome(A.RUNNING, "VF hot-plug in progress", started=now)
            if isinstance(action, A.DetachVF):
                s.detach_vf(self._vm_index(action.vm))
                return A.Outcome(A.RUNNING, "traffic moved to the vNIC standby; VF unplugging", started=now)
            if isinstance(action, A.RestartVM):
                s.restart_vm(self._vm_index(action.vm, present=False), self._host_index(action.host))
                return A.Outcome(A.RUNNING, f"{action.vm} booting on {action.host}", started=now)
            if isinstance(action, A.CreateVM):
                s.create_vm(self._vm_index(action.vm, present=False), self._host_index(action.host))
            elif isinstance(action, A.SetVFRate):
                s.set_vf_rate(self._vm_index(action.vm), action.rate)
            elif isinstance(action, A.SetCpu):
                vm = self._vm_index(action.vm)
                if action.weight > 0:
                    s.vm_weight[vm] = action.weight
                if action.cap >= 0:
                    s.vm_cap[vm] = action.cap
            elif isinstance(action, A.SetIoLimit):
                s.vm_io.limit[self._vm_index(action.vm)] = action.iops
            elif isinstance(action, A.SetIoSize):
                s.vm_io.size_limit[self._vm_index(action.vm)] = action.size
            elif isinstance(action, A.SetNetLimit):
                s.vm_net_limit[self._vm_index(action.vm)] = action.rate
            elif isinstance(action, A.SetHostPower):
                s.set_host_power(self._host_index(action.host), action.state)
            elif isinstance(action, A.SetDom0Weight):
                s.dom0_weight[self._host_index(action.host)] = action.weight
            else:
                return A.Outcome(A.FAILED, f"the sim driver cannot apply {action.kind}", started=now, finished=now)
        except SimError as exc:
            return A.Outcome(A.FAILED, str(exc), started=now, finished=now)
        return A.Outcome(A.OK, "applied", started=now, finished=now)

    def poll(self, action: A.Action) -> A.Outcome:
        s, now = self.sim, self.sim.t
        if isinstance(action, A.Migrate):
            vm = self._vm_index(action.vm, present=False)
            state = s.migration_state(vm)
            if state == "running":
                mig, _ = s.migrations[vm]
                return A.Outcome(
                    A.RUNNING, f"round {mig.round}, {mig.sent / 2**20:.0f} MiB sent", started=self._started.get(vm, now)
                )
            rec = s.last_migration[vm]
            details = {
                "bytes": rec.bytes,
                "downtime": rec.downtime,
                "rounds": rec.rounds,
                "duration": rec.finished - rec.started,
                "throttle": rec.throttle,
                "mode": rec.mode,
            }
            status = A.OK if rec.moved else A.FAILED  # not-converged still moved the VM, with a long downtime
            return A.Outcome(status, rec.status, started=rec.started, finished=rec.finished, details=details)
        if isinstance(action, A.AttachVF):
            state = s.vf_state(self._vm_index(action.vm, present=False))
            if state == "attaching":
                return A.Outcome(A.RUNNING, "VF hot-plug in progress")
            if state == "attached":
                return A.Outcome(A.OK, "VF attached", finished=now)
            return A.Outcome(A.FAILED, f"VF state is {state}", finished=now)
        if isinstance(action, A.DetachVF):
            if s.vf_state(self._vm_index(action.vm, present=False)) == "detaching":
                return A.Outcome(A.RUNNING, "waiting for the device-removed event")
            return A.Outcome(A.OK, "VF detached", finished=now)
        if isinstance(action, A.RestartVM):
            state = s.restart_state(self._vm_index(action.vm, present=False))
            if state == "booting":
                return A.Outcome(A.RUNNING, "booting")
            if state == "running":
                return A.Outcome(A.OK, f"running on {action.host}", finished=now)
            return A.Outcome(A.FAILED, f"{action.vm} is down", finished=now)
        return A.Outcome(A.OK, "done", finished=now)

    def cancel(self, action: A.Action) -> A.Outcome:
        s, now = self.sim, self.sim.t
        if isinstance(action, A.Migrate):
            vm = self._vm_index(action.vm, present=False)
            if vm in s.migrations:
                if s.cancel_migration(vm, "cancelled"):
                    return A.Outcome(A.CANCELLED, "migration cancelled; the VM stays on its source", finished=now)
                return A.Outcome(A.RUNNING, "in post-copy, which cannot be cancelled; it runs to its end")
        return A.Outcome(A.OK, "nothing to cancel", finished=now)
