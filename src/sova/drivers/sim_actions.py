"""How the ``sim`` driver carries out each kind of action: one handler per kind, registered for its class.

A handler's ``apply`` starts the action on the simulator (an outcome for what takes time, None for what is
done at once); ``poll`` says how a running one stands; ``cancel`` stops one if it can. A kind without a
handler here gets the fallback, which fails it with a message saying so. The simulator's refusals (``SimError``) become failed outcomes
in ``SimDriver``, never exceptions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol

from sova.model.actions import (
    CANCELLED,
    FAILED,
    OK,
    RUNNING,
    AttachVF,
    CreateVM,
    DetachVF,
    FenceHost,
    KindTable,
    Migrate,
    Outcome,
    RestartVM,
    SetCpu,
    SetDom0Weight,
    SetHostPower,
    SetIoLimit,
    SetIoSize,
    SetNetLimit,
    SetVFRate,
)
from sova.sim.engine import Simulator


class SimDriver(Protocol):
    """What a handler uses of the driver: the simulator, names to rows, the clock."""

    sim: Simulator

    def vm_index(self, name: str, present: bool = True) -> int: ...

    def host_index(self, name: str) -> int: ...

    def now(self) -> float: ...


class SimHandler(ABC):
    """What the sim driver does for one kind of action; by default, done at once and nothing to cancel."""

    @abstractmethod
    def apply(self, driver: SimDriver, action) -> Outcome | None:
        """Start or do the action: an outcome, or None for "applied" at once."""

    def poll(self, driver: SimDriver, action) -> Outcome:
        return Outcome(OK, "done", finished=driver.now())

    def cancel(self, driver: SimDriver, action) -> Outcome:
        return Outcome(OK, "nothing to cancel", finished=driver.now())


class _Unhandled(SimHandler):
    """A kind the sim driver has no handler for: it fails, saying so."""

    def apply(self, driver, action):
        return Outcome(
            FAILED, f"the sim driver cannot apply {action.kind}", started=driver.now(), finished=driver.now()
        )


SIM_HANDLERS: KindTable[SimHandler] = KindTable(_Unhandled())
handles = SIM_HANDLERS.register


@handles(Migrate)
class _Migrate(SimHandler):
    def apply(self, driver, action):
        driver.sim.start_migration(driver.vm_index(action.vm), driver.host_index(action.dst))
        return Outcome(RUNNING, f"migrating {action.vm} to {action.dst}", started=driver.now())

    def poll(self, driver, action):
        sim, vm = driver.sim, driver.vm_index(action.vm, present=False)
        if vm in sim.migrations.under_way:
            mig, _ = sim.migrations.under_way[vm]
            return Outcome(RUNNING, f"round {mig.round}, {mig.sent / 2**20:.0f} MiB sent", started=mig.started)
        rec = sim.migrations.last[vm]
        details = {
            "bytes": rec.bytes,
            "downtime": rec.downtime,
            "rounds": rec.rounds,
            "duration": rec.finished - rec.started,
            "throttle": rec.throttle,
            "mode": rec.mode,
        }
        status = OK if rec.moved else FAILED  # not-converged still moved the VM, with a long downtime
        return Outcome(status, rec.status, started=rec.started, finished=rec.finished, details=details)

    def cancel(self, driver, action):
        sim, vm = driver.sim, driver.vm_index(action.vm, present=False)
        if vm not in sim.migrations.under_way:
            return super().cancel(driver, action)
        if sim.cancel_migration(vm, "cancelled"):
            return Outcome(CANCELLED, "migration cancelled; the VM stays on its source", finished=driver.now())
        return Outcome(RUNNING, "in post-copy, which cannot be cancelled; it runs to its end")


@handles(AttachVF)
class _AttachVF(SimHandler):
    def apply(self, driver, action):
        driver.sim.attach_vf(driver.vm_index(action.vm), action.rate)
        return Outcome(RUNNING, "VF hot-plug in progress", started=driver.now())

    def poll(self, driver, action):
        state = driver.sim.vfs.state(driver.vm_index(action.vm, present=False))
        if state == "attaching":
            return Outcome(RUNNING, "VF hot-plug in progress")
        if state == "attached":
            return Outcome(OK, "VF attached", finished=driver.now())
        return Outcome(FAILED, f"VF state is {state}", finished=driver.now())


@handles(DetachVF)
class _DetachVF(SimHandler):
    def apply(self, driver, action):
        driver.sim.vfs.detach(driver.vm_index(action.vm), driver.sim.t)
        return Outcome(RUNNING, "traffic moved to the vNIC standby; VF unplugging", started=driver.now())

    def poll(self, driver, action):
        if driver.sim.vfs.state(driver.vm_index(action.vm, present=False)) == "detaching":
            return Outcome(RUNNING, "waiting for the device-removed event")
        return Outcome(OK, "VF detached", finished=driver.now())


@handles(RestartVM)
class _RestartVM(SimHandler):
    def apply(self, driver, action):
        driver.sim.restart_vm(driver.vm_index(action.vm, present=False), driver.host_index(action.host))
        return Outcome(RUNNING, f"{action.vm} booting on {action.host}", started=driver.now())

    def poll(self, driver, action):
        state = driver.sim.faults.restart_state(driver.vm_index(action.vm, present=False))
        if state == "booting":
            return Outcome(RUNNING, "booting")
        if state == "running":
            return Outcome(OK, f"running on {action.host}", finished=driver.now())
        return Outcome(FAILED, f"{action.vm} is down", finished=driver.now())


@handles(FenceHost)
class _FenceHost(SimHandler):
    """A crashed host is off already; one that only went silent is powered off, with its VMs (a fence
    agent's power-off): they are then down, and may start elsewhere."""

    def apply(self, driver, action):
        host = driver.host_index(action.host)
        if driver.sim.faults.failed[host]:
            return Outcome(OK, f"{action.host} is off (it crashed)", finished=driver.now())
        driver.sim.crash_host(host)
        return Outcome(OK, f"{action.host} powered off", finished=driver.now())


@handles(CreateVM)
class _CreateVM(SimHandler):
    def apply(self, driver, action):
        driver.sim.create_vm(driver.vm_index(action.vm, present=False), driver.host_index(action.host))


@handles(SetVFRate)
class _SetVFRate(SimHandler):
    def apply(self, driver, action):
        driver.sim.vfs.set_rate(driver.vm_index(action.vm), action.rate)


@handles(SetCpu)
class _SetCpu(SimHandler):
    def apply(self, driver, action):
        driver.sim.compute.set_vm_cpu(driver.vm_index(action.vm), action.weight, action.cap)


@handles(SetIoLimit)
class _SetIoLimit(SimHandler):
    def apply(self, driver, action):
        driver.sim.storage.set_limit(driver.vm_index(action.vm), action.iops)


@handles(SetIoSize)
class _SetIoSize(SimHandler):
    def apply(self, driver, action):
        driver.sim.storage.set_size(driver.vm_index(action.vm), action.size)


@handles(SetNetLimit)
class _SetNetLimit(SimHandler):
    def apply(self, driver, action):
        driver.sim.network.set_net_limit(driver.vm_index(action.vm), action.rate)


@handles(SetHostPower)
class _SetHostPower(SimHandler):
    def apply(self, driver, action):
        driver.sim.set_host_power(driver.host_index(action.host), action.state)


@handles(SetDom0Weight)
class _SetDom0Weight(SimHandler):
    def apply(self, driver, action):
        driver.sim.compute.set_dom0_weight(driver.host_index(action.host), action.weight)
