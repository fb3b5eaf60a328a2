"""What the driver asks of the simulated hypervisors: live migrations and SR-IOV VF hot-plug,
refused where a real hypervisor would refuse them.

A part of ``Simulator`` (sim/engine.py): the engine's commands that span its subsystems (a migration
needs a flow, memory on its destination, its host awake, and moves its VM when it ends); the migrations'
own state is the ``LiveMigrations`` subsystem's (sim/live_migrations.py).
"""

from __future__ import annotations

import numpy as np

from sova.sim.datapath import DOM0
from sova.sim.migration import Migration
from sova.sim.records import MigrationRecord, SimError


class HypervisorOperations:
    """The hypervisor operations of the simulator: migrations and VF hot-plug, as the driver calls them."""

    def host_mem_used(self, host: int) -> float:
        """MiB the host's VMs (those there now) and the migrations heading to it hold."""
        held = self.vm_mem[(self.vm_host == host) & self.vm_present].sum()  # one host: no bincount of all
        return float(held + self.migrations.reserved_memory[host])

    def require_room(self, host: int, vm: int) -> None:
        """Refuse a host without the memory for the VM (a migration, a creation, a restart)."""
        free = self.host_mem[host] - self.host_mem_used(host)
        if free < self.vm_mem[vm]:
            where, name = self.host_names[host], self.vm_names[vm]
            raise SimError(f"{where} has {free:.0f} MiB free, {name} needs {self.vm_mem[vm]:.0f} MiB")

    def require_running(self, vm: int) -> str:
        """The VM's name; refused if it is not there (not arrived yet, or deleted)."""
        if not self.vm_present[vm]:
            raise SimError(f"{self.vm_names[vm]} is not running (it has not arrived or has been deleted)")
        if self.vm_down[vm]:
            raise SimError(f"{self.vm_names[vm]} is not running ({self.restart_state(vm)}: its host crashed)")
        return self.vm_names[vm]

    def start_migration(self, vm: int, dst: int) -> None:
        """Begin a live migration; refuses what a hypervisor would refuse."""
        src = int(self.vm_host[vm])
        name = self.require_running(vm)
        if vm in self.migrations.under_way:
            raise SimError(f"{name} is already migrating")
        if dst == src:
            raise SimError(f"{name} already runs on {self.host_names[dst]}")
        if self.host_failed[dst]:
            raise SimError(f"{self.host_names[dst]} has crashed")
        if self.vm_vf[vm] or vm in self.vf_plugging:
            raise SimError(f"{name} has an SR-IOV VF attached; detach it before migrating")
        self.require_room(dst, vm)
        mig = Migration(
            vm=vm,
            src=src,
            dst=dst,
            memory=self.vm_mem[vm] * 1024**2,
            dirty_rate=self.vm_dirty[vm],
            wss=self.vm_wss[vm],
            started=self.t,
            config=self.migrations.config,
            wait_left=0.0 if self.host_failed[dst] else self.power.wait_for(dst, self.t),
        )
        rate = self.params["migration_failure_rate"]
        mig.doomed = bool(rate) and self.rng.random() < rate  # no draw without the fault: runs stay as they were
        self.migrations.begin(mig, self.add_flow((DOM0, src), (DOM0, dst), "migration"), self.vm_mem[vm])

    def cancel_migration(self, vm: int, reason: str = "cancelled") -> bool:
        """Stop a migration; the VM stays on its source. False in post-copy, which cannot be undone (the
        guest runs on the destination and its memory is in two places): it runs to its end."""
        under_way = self.migrations.under_way
        if vm not in under_way or under_way[vm][0].on_destination:
            return False
        self._finish_migration(vm, reason)
        return True

    def _finish_migration(self, vm: int, status: str) -> None:
        mig, fid = self.migrations.end(vm, self.vm_mem[vm])
        self.flows[fid].alive = False
        self._routes_dirty = True
        moved = mig.on_destination
        if moved and self.vm_host[vm] != mig.dst:
            self._move(vm, mig.dst)
        record = MigrationRecord(
            vm=self.vm_names[vm],
            src=self.host_names[mig.src],
            dst=self.host_names[mig.dst],
            started=mig.started,
            finished=mig.started + mig.elapsed,  # within the step, not rounded to it
            bytes=mig.sent,
            downtime=mig.downtime if moved else 0.0,
            rounds=mig.round,
            status=status,
            moved=moved,
            throttle=mig.throttle,
            mode=mig.mode,
        )
        self.migrations.record(vm, record)

    def attach_vf(self, vm: int, rate: float) -> None:
        h = int(self.vm_host[vm])
        name = self.require_running(vm)
        if vm in self.migrations.under_way:
            raise SimError(f"{name} is migrating; a VF cannot be attached now")
        if self.vm_vf[vm] or vm in self.vf_plugging:
            raise SimError(f"{name} already has a VF (or one is being plugged)")
        if self.vf_used[h] >= self.max_vfs[h]:
            raise SimError(f"{self.host_names[h]} has no free VF ({self.max_vfs[h]} in use)")
        self.vf_used[h] += 1
        self.vm_vf_rate[vm] = rate
        self.vf_pending.append((self.t + self.params["vf_attach_time"], vm))
        self.vf_plugging[vm] = "attaching"

    def detach_vf(self, vm: int) -> None:
        """Traffic fails over to the para-virtual standby at once; the VF is free after the unplug."""
        if not self.vm_vf[vm]:
            raise SimError(f"{self.vm_names[vm]} has no VF attached")
        self.vm_vf[vm] = False
        self._routes_dirty = True
        self._moved_vms.add(vm)
        self.vf_log.append((self.t, self.vm_names[vm], self.host_names[self.vm_host[vm]], "detached"))
        self.vf_pending.append((self.t + self.params["vf_detach_time"], vm))
        self.vf_plugging[vm] = "detaching"

    def set_vf_rate(self, vm: int, rate: float) -> None:
        if not self.vm_vf[vm]:
            raise SimError(f"{self.vm_names[vm]} has no VF attached")
        self.vm_vf_rate[vm] = rate

    def _process_vf_ops(self, t: float) -> None:
        due = [op for op in self.vf_pending if op[0] <= t + 1e-9]
        if not due:
            return
        self.vf_pending = [op for op in self.vf_pending if op[0] > t + 1e-9]
        for _, vm in due:
            if self.vf_plugging.pop(vm) == "attaching":
                self.vm_vf[vm] = True
                self._moved_vms.add(vm)
                self._routes_dirty = True
                self.vf_log.append((t, self.vm_names[vm], self.host_names[self.vm_host[vm]], "attached"))
            else:
                self.vf_used[self.vm_host[vm]] -= 1

    def vf_state(self, vm: int) -> str:
        """'none', 'attaching', 'attached' or 'detaching' (the VF is unplugging, traffic is on the vNIC)."""
        return self.vf_plugging.get(vm) or ("attached" if self.vm_vf[vm] else "none")

    def _advance_migrations(self, rate: np.ndarray, dt: float, run: np.ndarray) -> np.ndarray:
        """Advance every migration; returns each VM's running fraction of this step (pauses included)."""
        run_now, arrived, ended = self.migrations.advance(rate, dt, run)
        for mig in arrived:  # post-copy, or the switch-over: the guest runs on the destination now
            if self.vm_host[mig.vm] != mig.dst:
                self._move(mig.vm, mig.dst)
        for mig in ended:
            self._finish_migration(mig.vm, mig.status)
        return run_now

    def _move(self, vm: int, dst: int) -> None:
        self.vm_host[vm] = dst
        self._moved_vms.add(vm)

    def _paused_fraction(self) -> np.ndarray:
        """Fraction of the coming step each VM does not run: paused by a stop-and-copy under way, or its
        vCPUs throttled by auto-converge; all of it while the VM is not there."""
        return self.migrations.paused(np.where(self.vm_present & ~self.vm_down, 0.0, 1.0), self.fabric_dt)
