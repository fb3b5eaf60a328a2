"""The simulator's commands that span its subsystems: what the driver asks of the simulated hypervisors
(live migrations, VF hot-plug, creating and restarting VMs) and what a host crash does, refused where a
real hypervisor would refuse them.

A part of ``Simulator`` (sim/engine.py) that holds no state: each command checks and changes the
subsystems that own it (the placement, migrations, VFs, faults, power, lifecycle). A migration needs a
flow, memory on its destination and its host awake, and moves its VM when it ends; a crash ends the
migrations that touch the host; a VM comes and goes as the lifecycle says.
"""

from __future__ import annotations

import numpy as np

from sova.sim.datapath import DOM0
from sova.sim.migration import Migration
from sova.sim.records import MigrationRecord, SimError
from sova.sim.vm_lifecycle import ARRIVE, CREATED, DELETED, REFUSED


class HypervisorOperations:
    """Migrations, VF hot-plug, VM creation, restarts and crashes, as the driver and the events call them."""

    def host_mem_used(self, host: int) -> float:
        """MiB the host's VMs (those there now) and the migrations heading to it hold."""
        held = self.memory_held()[self.vms.on_host(host)].sum()  # one host: no bincount of all
        return float(held + self.migrations.reserved_memory[host])

    def memory_held(self) -> np.ndarray:
        """Per VM: MiB a running VM holds on its host (none where vm_memory = creation, as in CloudSim)."""
        return self.vms.memory if self.params["vm_memory"] == "held" else np.zeros_like(self.vms.memory)

    def require_room(self, host: int, vm: int) -> None:
        """Refuse a host without the memory for the VM (a migration, a creation, a restart)."""
        free = self.vms.host_memory[host] - self.host_mem_used(host)
        if free < self.vms.memory[vm]:
            where, name = self.host_names[host], self.vm_names[vm]
            raise SimError(f"{where} has {free:.0f} MiB free, {name} needs {self.vms.memory[vm]:.0f} MiB")

    def require_running(self, vm: int) -> str:
        """The VM's name; refused if it is not there (not arrived yet, or deleted)."""
        if not self.vms.present[vm]:
            raise SimError(f"{self.vm_names[vm]} is not running (it has not arrived or has been deleted)")
        if self.faults.vm_down[vm]:
            raise SimError(f"{self.vm_names[vm]} is not running ({self.faults.restart_state(vm)}: its host crashed)")
        return self.vm_names[vm]

    # ------------------------------------------------------------------ migrations
    def start_migration(self, vm: int, dst: int) -> None:
        """Begin a live migration; refuses what a hypervisor would refuse."""
        src = int(self.vms.host[vm])
        name = self.require_running(vm)
        if vm in self.migrations.under_way:
            raise SimError(f"{name} is already migrating")
        if dst == src:
            raise SimError(f"{name} already runs on {self.host_names[dst]}")
        self.faults.require_up(dst)
        if self.vms.on_vf[vm] or vm in self.vfs.plugging:
            raise SimError(f"{name} has an SR-IOV VF attached; detach it before migrating")
        if self.params["vm_memory"] == "held":  # a running VM that holds none needs none where it goes
            self.require_room(dst, vm)
        mig = Migration(
            vm=vm,
            src=src,
            dst=dst,
            memory=self.vms.memory[vm] * 1024**2,
            dirty_rate=self.vms.dirty_rate[vm],
            wss=self.vms.wss[vm],
            started=self.t,
            config=self.migrations.config,
            wait_left=self.power.wait_for(dst, self.t),
            fixed_time=self._fixed_migration_time(vm, dst),
        )
        rate = self.params["migration_failure_rate"]
        mig.doomed = bool(rate) and self.rng.random() < rate  # no draw without the fault: runs stay as they were
        # CloudSim's model puts nothing on the network: no flow (-1)
        flow = -1 if mig.fixed_time else self.network.add_flow((DOM0, src), (DOM0, dst), "migration")
        self.migrations.begin(mig, flow, self.memory_held()[vm])

    def _fixed_migration_time(self, vm: int, dst: int) -> float:
        """CloudSim's migration time: the VM's memory over half the destination's NIC bandwidth (0: pre-copy,
        which takes what the network gives)."""
        if self.migrations.config.model != "cloudsim":
            return 0.0
        return float(self.vms.memory[vm] * 1024**2 * 8 / (self.network.nic_bw[dst] / 2))

    def cancel_migration(self, vm: int, reason: str = "cancelled") -> bool:
        """Stop a migration; the VM stays on its source. False in post-copy, which cannot be undone (the
        guest runs on the destination and its memory is in two places): it runs to its end."""
        under_way = self.migrations.under_way
        if vm not in under_way or under_way[vm][0].on_destination:
            return False
        self._finish_migration(vm, reason)
        return True

    def _finish_migration(self, vm: int, status: str) -> None:
        mig, fid = self.migrations.end(vm, self.memory_held()[vm])
        if fid >= 0:
            self.network.flows[fid].alive = False
        self.vms.routes_dirty = True
        moved = mig.on_destination
        if moved and self.vms.host[vm] != mig.dst:
            self.vms.move(vm, mig.dst)
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

    def _advance_migrations(self, rate: np.ndarray, dt: float, run: np.ndarray) -> np.ndarray:
        """Advance every migration; returns each VM's running fraction of this step (pauses included)."""
        run_now, arrived, ended = self.migrations.advance(rate, dt, run, self.t)
        for mig in arrived:  # post-copy, or the switch-over: the guest runs on the destination now
            if self.vms.host[mig.vm] != mig.dst:
                self.vms.move(mig.vm, mig.dst)
        for mig in ended:
            self._finish_migration(mig.vm, mig.status)
        return run_now

    def _paused_fraction(self) -> np.ndarray:
        """Fraction of the coming step each VM does not run: paused by a stop-and-copy under way, or its
        vCPUs throttled by auto-converge; all of it while the VM is not there."""
        absent = np.where(self.vms.present & ~self.faults.vm_down, 0.0, 1.0)
        return self.migrations.paused(absent, self.fabric_dt)

    # ------------------------------------------------------------------ VFs
    def attach_vf(self, vm: int, rate: float) -> None:
        name = self.require_running(vm)
        if vm in self.migrations.under_way:
            raise SimError(f"{name} is migrating; a VF cannot be attached now")
        self.vfs.attach(vm, rate, self.t)

    # ------------------------------------------------------------------ VMs coming and going
    def create_vm(self, vm: int, host: int) -> None:
        """Create a waiting VM on a host (the driver, for the admission policy); refuses what a hypervisor
        would refuse."""
        if vm not in self.lifecycle.waiting:
            state = "runs already" if self.vms.present[vm] else "is not waiting to be placed"
            raise SimError(f"{self.vm_names[vm]} {state}")
        self._place(vm, host)
        del self.lifecycle.waiting[vm]
        self.lifecycle.record(self.t, vm, CREATED, self.host_names[host])

    def _process_lifecycle(self, t: float) -> None:
        """Departures, then arrivals, due by time t."""
        for event, vm, at in self.lifecycle.due(t):
            if event == ARRIVE:
                self._arrive(vm, at, t)
            else:
                self._depart(vm, at)

    def _arrive(self, vm: int, at: float, now: float) -> None:
        if not self.lifecycle.to_place(vm, at, now):
            return
        host = int(self.vms.host[vm])
        try:
            self._place(vm, host)
        except SimError as exc:
            self.lifecycle.record(at, vm, REFUSED, self.host_names[host], str(exc))
            return
        self.lifecycle.record(at, vm, CREATED, self.host_names[host])

    def _place(self, vm: int, host: int) -> None:
        self.power.require_on(host)
        self.require_room(host, vm)
        if self.vms.on_vf[vm]:
            self.vfs.hold(host, f" for {self.vm_names[vm]}")
        self.vms.host[vm] = host
        self.vms.present[vm] = True
        self.vms.reroute(vm)
        self.vms.version += 1

    def _depart(self, vm: int, at: float) -> None:
        if self.lifecycle.withdraw(vm, at) or not self.vms.present[vm]:
            return
        if vm in self.migrations.under_way:
            self._finish_migration(vm, "cancelled")  # the guest is gone: there is nothing left to copy
        self.vfs.release(vm)
        self.vms.present[vm] = False
        self.vms.reroute(vm)
        self.vms.version += 1
        self.lifecycle.record(at, vm, DELETED, self.host_names[self.vms.host[vm]])

    # ------------------------------------------------------------------ host crashes
    def crash_host(self, host: int) -> None:
        """The host stops now, with its VMs; migrations from or to it are cancelled (a VM migrating away
        from it is down with it)."""
        if self.faults.failed[host]:
            raise SimError(f"{self.host_names[host]} has crashed already")
        for vm in self.migrations.touching(host):
            on_it = self.migrations.under_way[vm][0].src == host
            self._finish_migration(vm, "failed")
            self.faults.vm_down[vm] |= on_it
        self.faults.crash(host)

    def restart_vm(self, vm: int, host: int) -> None:
        """Boot a down VM of a crashed host on `host` (on, with the memory for it), from its disks on shared
        storage; it comes up on its vNIC (a VF belonged to the crashed host's NIC)."""
        self.faults.require_restartable(vm)
        self.faults.require_up(host)
        self.power.require_on(host)
        self.require_room(host, vm)
        src = int(self.vms.host[vm])
        self.vfs.drop(vm)
        self.vms.move(vm, host)
        self.faults.restarted(vm, src, self.t)
        self.vms.version += 1
