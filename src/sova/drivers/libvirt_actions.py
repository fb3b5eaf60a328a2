"""How the libvirt driver carries out each kind of action on real hosts: one handler per kind, registered for
its class.

A handler's ``apply`` gets the VM's host and domain (unless it acts on a host: ``needs_domain`` False) and
either finishes the action (None: "applied"), or starts a background job the driver's ``poll`` and
``cancel`` follow (migrations, VF unplugs), or refuses. A kind without a handler gets the fallback, which
fails it with a message saying so; a libvirt error is a failed outcome (``LibvirtDriver.apply``), never an
exception.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod

from sova.drivers.libvirt_common import CPU_PERIOD_US, Job, Refused, error_text
from sova.drivers.libvirt_dom0 import is_xen, set_dom0_weight
from sova.model.actions import (
    FAILED,
    OK,
    RUNNING,
    AttachVF,
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


class LibvirtHandler(ABC):
    """What the libvirt driver does for one kind of action."""

    needs_domain = True  # apply gets the VM's host and domain (looked up first: a VM gone is a refusal)

    @abstractmethod
    def apply(self, driver, action, now: float, host: str | None, dom) -> Outcome | None:
        """Do or start the action: an outcome, or None for "applied" at once."""


class _Unhandled(LibvirtHandler):
    """A kind the libvirt driver has no handler for: it fails, saying so."""

    needs_domain = False

    def apply(self, driver, action, now, host, dom):
        return Outcome(FAILED, f"the libvirt driver cannot apply {action.kind}", now, now)


LIBVIRT_HANDLERS: KindTable[LibvirtHandler] = KindTable(_Unhandled())
handles = LIBVIRT_HANDLERS.register


def _live(driver) -> int:
    return driver.hosts.flag("VIR_DOMAIN_AFFECT_LIVE", 1)


@handles(SetDom0Weight)
class _SetDom0Weight(LibvirtHandler):
    needs_domain = False

    def apply(self, driver, action, now, host, dom):
        """Xen's credit weight of Dom0; on KVM, the guests' emulator threads' shares around it."""
        hosts = driver.hosts
        conn = hosts.conn(action.host) if action.host in hosts.names else None
        if conn is None:
            return Outcome(FAILED, f"host {action.host} is unknown or unreachable", now, now)
        running = [] if is_xen(conn) else hosts.running_on(conn, action.host)
        done, words = set_dom0_weight(conn, running, action.weight, _live(driver))
        return Outcome(OK if done else FAILED, words, now, driver.now())


@handles(SetHostPower)
class _SetHostPower(LibvirtHandler):
    needs_domain = False

    def apply(self, driver, action, now, host, dom):
        raise Refused("switching a host's power needs IPMI or wake-on-LAN, which this driver does not drive")


@handles(FenceHost)
class _FenceHost(LibvirtHandler):
    """Destroy every domain still running on the failed host, if its daemon answers; if it does not, whether
    its guests run is unknown, and an operator must confirm it is off (a power fence is not driven here)."""

    needs_domain = False

    def apply(self, driver, action, now, host, dom):
        conn = driver.hosts.conn(action.host) if action.host in driver.hosts.names else None
        if conn is None:
            why = driver.hosts.unreachable.get(action.host, "unknown host")
            return Outcome(
                FAILED, f"{action.host} does not answer ({why}); whether its guests run is unknown", now, now
            )
        try:
            running = conn.listAllDomains(driver.hosts.flag("VIR_CONNECT_LIST_DOMAINS_ACTIVE", 1))
            for domain in running:
                domain.destroy()
        except Exception as e:
            return Outcome(FAILED, f"{action.host}'s guests could not be destroyed: {error_text(e)}", now, now)
        return Outcome(OK, f"{len(running)} guest(s) destroyed on {action.host}", now, driver.now())


@handles(RestartVM)
class _RestartVM(LibvirtHandler):
    needs_domain = False

    def apply(self, driver, action, now, host, dom):
        return driver.failover.restart(action, now)


@handles(Migrate)
class _Migrate(LibvirtHandler):
    def apply(self, driver, action, now, host, dom):
        return driver.migrations.start(action, host, dom, now)


@handles(AttachVF)
class _AttachVF(LibvirtHandler):
    def apply(self, driver, action, now, host, dom):
        driver.vfs.attach(host, dom, action.vm, action.rate)
        return Outcome(OK, driver.vfs.words(host, "attached"), now, driver.now())


@handles(DetachVF)
class _DetachVF(LibvirtHandler):
    def apply(self, driver, action, now, host, dom):
        job = Job(action, now, src=host)
        driver.hosts.jobs[action.vm] = job
        job.thread = threading.Thread(target=driver.vfs.detach_job, args=(job, host, action.vm), daemon=True)
        job.thread.start()
        return Outcome(RUNNING, "VF unplug requested; waiting for the device-removed event", now)


@handles(SetVFRate)
class _SetVFRate(LibvirtHandler):
    def apply(self, driver, action, now, host, dom):
        driver.vfs.set_rate(host, dom, action.vm, action.rate)


@handles(SetCpu)
class _SetCpu(LibvirtHandler):
    """KVM's cpu_shares for the weight; the cap as a quota of each vCPU's period."""

    def apply(self, driver, action, now, host, dom):
        params: dict[str, int] = {}
        if action.weight > 0:
            params["cpu_shares"] = int(action.weight)
        if action.cap >= 0:
            n = max(1, dom.info()[3])
            params["vcpu_period"] = CPU_PERIOD_US
            params["vcpu_quota"] = round(action.cap / n * CPU_PERIOD_US) if action.cap > 0 else -1
        if params:
            dom.setSchedulerParametersFlags(params, _live(driver))


@handles(SetIoLimit)
class _SetIoLimit(LibvirtHandler):
    def apply(self, driver, action, now, host, dom):
        for disk in re.findall(r"<target dev='(\w+)' bus=", driver.hosts.xml(dom)):
            dom.setBlockIoTune(disk, {"total_iops_sec": round(action.iops)}, _live(driver))


@handles(SetIoSize)
class _SetIoSize(LibvirtHandler):
    def apply(self, driver, action, now, host, dom):
        why = "libvirt has no request-merge limit for a disk (the guest's queue/max_sectors_kb sets one)"
        return Outcome(FAILED, why, now, now)


@handles(SetNetLimit)
class _SetNetLimit(LibvirtHandler):
    """The vNIC's average rate both ways, in KiB/s as libvirt takes it (0: no limit)."""

    def apply(self, driver, action, now, host, dom):
        kib = max(1, round(action.rate / 8 / 1024)) if action.rate > 0 else 0
        for dev in driver.vfs.vnic_devices(dom, action.vm):
            dom.setInterfaceParameters(dev, {"outbound.average": kib, "inbound.average": kib}, _live(driver))
