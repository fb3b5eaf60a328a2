"""An agent's local loops: its profile's local policies (VF scheduling, Dom0 tuning) and IO controllers (the
storage SLO engine), over the agent's own driver.

They are the host's fast loops, so they act at once (auto mode: no approval, no round trip to the
manager); the manager sees what they did in its audit trail (``local_audit``). The IO controllers hold
the VMs of this host that have an SLO, each VM's storage server being its host (its local disks) unless
the caller says otherwise (a simulated cluster's scenario does). A changed SLO is taken up between
ticks: that VM's target starts again from its new lower bound and the others go on; a VM that comes
under SLO control here, or leaves (an SLO cleared, a VM migrated away), binds the controllers anew.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from sova.control.audit import AuditEntry
from sova.control.runtime import Runtime
from sova.drivers.base import Driver
from sova.model.scenario import ControlSpec
from sova.model.snapshot import Snapshot
from sova.model.storage_slo import SloBook, StorageSlo
from sova.plan.base import Policy, controllers
from sova.plan.storage.io_control import bind_all
from sova.service.host_report import host_part


class SharedObservation:
    """A real host's driver as its agent's local loops see it: only this host (the driver reads its peers
    too, for migrations), and one observation shared with the agent's report. An observation younger than
    `max_age` seconds is handed out again, so a report and a monitor tick due together cost one (a real
    host's observation asks libvirtd and every guest's agent); `max_age` stays below the local loops'
    monitor period, so consecutive monitor ticks never see the same observation."""

    def __init__(self, driver: Driver, max_age: float, host: str | None = None):
        """host: the agent's own (None: every host the driver has)."""
        self.driver, self.max_age, self.host = driver, max_age, host
        self._last: Snapshot | None = None
        self._at = -math.inf

    def full(self) -> Snapshot:
        """The driver's whole observation (peers included), as the agent's report is made from."""
        now = time.monotonic()
        if self._last is None or now - self._at >= self.max_age:
            self._last, self._at = self.driver.observe(), now
        return self._last

    def observe(self) -> Snapshot:
        return own_part(self.full(), self.host) if self.host is not None else self.full()

    def __getattr__(self, name: str):
        return getattr(self.driver, name)  # every other call goes to the driver itself


def own_part(snap: Snapshot, host: str) -> Snapshot:
    """A host's own part of an observation, self-contained: flows to VMs elsewhere count as leaving it."""
    part = host_part(snap, host)
    mine = np.flatnonzero(snap.vm_host == snap.hosts.index(host))
    index = np.full(len(snap.vms), -1, dtype=np.int64)
    index[mine] = np.arange(len(mine))
    return replace(part, flow_dst=np.where(part.flow_dst >= 0, index[np.maximum(part.flow_dst, 0)], -1))


class LocalLoops:
    def __init__(
        self, driver: Driver, policies: list[Policy], control: ControlSpec, storage_of: dict[str, str] | None = None
    ):
        """policies: the profile's (the global ones are left to the manager); storage_of: each VM's storage
        server (None: its host)."""
        self.driver = driver
        self.policies = [p for p in policies if p.loop == "local"]
        self.controllers = controllers(self.policies)
        self.runtime = Runtime(driver, self.policies, control, keeper=False) if self.policies else None
        self.period = min((p.period for p in self.policies), default=math.inf)  # s between ticks
        self.storage_of = storage_of
        self.wanted: dict[str, StorageSlo] = {}  # every VM's SLO, as the manager gave them
        self.book = SloBook([])

    def follow(self, slos: dict[str, StorageSlo], layout: Snapshot) -> None:
        """Hold this host's VMs (those in `layout`) to their SLOs among `slos` (every VM's)."""
        self.wanted = slos
        self.see(layout)

    def see(self, layout: Snapshot) -> None:
        """Take up the VMs now on the host (`layout`: its latest observation) and the SLOs they have."""
        if not self.controllers:
            return
        here = {vm: self.wanted[vm] for vm in layout.vms if vm in self.wanted and self.wanted[vm].throughput}
        held = {vm: self.book.slo(vm) for vm in self.book.under_control()}
        if here == held:
            return
        changed = {vm for vm in here if held.get(vm) != here[vm]}
        if set(here) == set(held):
            for vm in changed:
                self.book.set_slo(vm, here[vm])
            if all(c.refresh(changed) for c in self.controllers):
                return
        self.book = SloBook(here)
        for vm, slo in here.items():
            self.book.set_slo(vm, slo)
        host_of = dict(zip(layout.vms, (layout.hosts[h] for h in layout.vm_host), strict=True))
        storage_of = self.storage_of or {}
        bind_all(self.controllers, self.book, {vm: storage_of.get(vm, host_of[vm]) for vm in here})

    def tick(self) -> list[AuditEntry]:
        """One tick of the loops; the audit entries they wrote in it."""
        if self.runtime is None:
            return []
        self.runtime.tick()
        entries = list(self.runtime.audit.entries)
        self.runtime.audit.entries.clear()
        return entries

    def status(self) -> dict[str, dict]:
        """What the IO controllers measured of each VM under SLO here: the SC rate and PF ratio of the last
        interval (per cent), the last second's throughput (IOPS) and mean latency (s), and the target."""
        out: dict[str, dict] = {}
        for controller in self.controllers:
            if not controller.vms:
                continue
            last = controller.seconds[-1] if controller.seconds else np.full(len(controller.vms), np.nan)
            for i, vm in enumerate(controller.vms):
                measured = self.book.get_status(vm)
                out[vm] = {
                    "sc_rate": measured.sc_rate,
                    "pf_ratio": measured.pf_ratio,
                    "throughput": _finite(last[i]),
                    "target": _finite(controller.targets()[i]),
                    "latency": _finite(controller.second_latency[i]),
                }
        return out


def _finite(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None
