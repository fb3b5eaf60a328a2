"""The ``sim`` driver: the built-in simulator behind the driver seam.

``observe`` copies only sensor counters and configuration a real host exposes; ``apply`` turns
actions into simulator operations and reports refusals as failed outcomes, never as exceptions.
"""

from __future__ import annotations

import numpy as np

from sova.model import actions as A
from sova.model.snapshot import Snapshot, VmCounters
from sova.sim.datapath import VM
from sova.sim.engine import Simulator
from sova.sim.records import SimError


class SimDriver:
    """Drives a Simulator; the runner advances the simulator's clock."""

    def __init__(self, sim: Simulator):
        self.sim = sim
        self._vm = {n: i for i, n in enumerate(sim.vm_names)}
        self._host = {n: i for i, n in enumerate(sim.host_names)}
        self._hosts, self._vms = (
            tuple(sim.host_names),
            tuple(sim.vm_names),
        )  # shared: equal snapshots compare by identity
        self._started: dict[int, float] = {}
        # VM-to-VM and VM-to-outside flows are the workloads': fixed for the run (only migration flows,
        # which start and end in Dom0, come and go), so their endpoints are read once
        self._vm_flows = np.array(
            [i for i, f in enumerate(sim.flows) if f.src[0] == VM and f.kind != "io"], dtype=np.int64
        )
        self._flow_src = np.array([sim.flows[f].src[1] for f in self._vm_flows], dtype=np.int64)
        self._flow_dst = np.array(
            [sim.flows[f].dst[1] if sim.flows[f].dst[0] == VM else -1 for f in self._vm_flows], dtype=np.int64
        )

    def now(self) -> float:
        return self.sim.t

    def observe(self) -> Snapshot:
        s = self.sim
        c = s.counters
        counters = VmCounters(**{k: c[k].copy() for k in VmCounters.__dataclass_fields__})
        nic = np.where(s.vm_vf, "vf", "vnic").astype(object)
        for vm, state in s.vf_plugging.items():  # a hot-plug in progress: 'attaching' or 'detaching'
            nic[vm] = state
        migrating = np.zeros(s.V, dtype=bool)
        migrating[list(s.migrations)] = True
        return Snapshot(
            time=s.t,
            hosts=self._hosts,
            vms=self._vms,
            host_cores=s.host_cores.copy(),
            host_memory=s.host_mem.copy(),
            host_cpu_time=c["host_cpu_time"].copy(),
            dom0_cpu_time=c["dom0_cpu_time"].copy(),
            dom0_vcpus=s.dom0_vcpus.copy(),
            nic_bandwidth=s.nic_bw.copy(),
            nic_rx_bytes=c["nic_rx_bytes"].copy(),
            nic_tx_bytes=c["nic_tx_bytes"].copy(),
            vfs_total=s.max_vfs.copy(),
            vfs_used=s.vf_used.copy(),
            vm_host=s.vm_host.copy(),
            vm_vcpus=s.vm_vcpus.copy(),
            vm_memory=s.vm_mem.copy(),
            vm_memory_used=s.vm_mem_used.copy(),
            vm_dirty_rate=s.vm_dirty.copy(),
            vm_weight=s.vm_weight.copy(),
            vm_cap=s.vm_cap.copy(),
            vm_nic=tuple(nic),
            vm_vf_rate=np.where(s.vm_vf, s.vm_vf_rate, 0.0),
            vm_migrating=migrating,
            counters=counters,
            flow_src=self._flow_src,
            flow_dst=self._flow_dst,
            flow_bytes=s.flow_bytes[self._vm_flows],
        )

    def _vm_index(self, name: str) -> int:
        if name not in self._vm:
            raise SimError(f"no VM named {name!r}")
        return self._vm[name]

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
            if isinstance(action, A.SetVFRate):
                s.set_vf_rate(self._vm_index(action.vm), action.rate)
            elif isinstance(action, A.SetCpu):
                vm = self._vm_index(action.vm)
                if action.weight > 0:
                    s.vm_weight[vm] = action.weight
                if action.cap >= 0:
                    s.vm_cap[vm] = action.cap
            elif isinstance(action, A.SetIoLimit):
                s.vm_io_limit[self._vm_index(action.vm)] = action.iops
            elif isinstance(action, A.SetNetLimit):
                s.vm_net_limit[self._vm_index(action.vm)] = action.rate
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
            vm = self._vm_index(action.vm)
            state = s.migration_state(vm)
            if state == "running":
                mig, _ = s.migrations[vm]
                return A.Outcome(
                    A.RUNNING, f"round {mig.round}, {mig.sent / 2**20:.0f} MiB sent", started=self._started.get(vm, now)
                )
            rec = next(r for r in reversed(s.migration_log) if r.vm == action.vm)
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
            state = s.vf_state(self._vm_index(action.vm))
            if state == "attaching":
                return A.Outcome(A.RUNNING, "VF hot-plug in progress")
            if state == "attached":
                return A.Outcome(A.OK, "VF attached", finished=now)
            return A.Outcome(A.FAILED, f"VF state is {state}", finished=now)
        if isinstance(action, A.DetachVF):
            if s.vf_state(self._vm_index(action.vm)) == "detaching":
                return A.Outcome(A.RUNNING, "waiting for the device-removed event")
            return A.Outcome(A.OK, "VF detached", finished=now)
        return A.Outcome(A.OK, "done", finished=now)

    def cancel(self, action: A.Action) -> A.Outcome:
        s, now = self.sim, self.sim.t
        if isinstance(action, A.Migrate):
            vm = self._vm_index(action.vm)
            if vm in s.migrations:
                if s.cancel_migration(vm, "cancelled"):
                    return A.Outcome(A.CANCELLED, "migration cancelled; the VM stays on its source", finished=now)
                return A.Outcome(A.RUNNING, "in post-copy, which cannot be cancelled; it runs to its end")
        return A.Outcome(A.OK, "nothing to cancel", finished=now)
