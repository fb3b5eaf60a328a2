"""Hosts without VMs go to sleep (or off) once they have been empty for ``idle`` seconds, as VMware DPM
puts idle hosts in standby. Waking is on demand: a migration to a sleeping host wakes it (the driver).

With ``power-aware`` (which empties hosts) this is the second half of Beloglazov and Buyya's dynamic
consolidation; alone it is their DVFS baseline's "an idle host draws nothing".
"""

from __future__ import annotations

import numpy as np

from sova.analyze.findings import Findings
from sova.model.actions import Action, SetHostPower
from sova.model.knowledge import Knowledge
from sova.model.schema import Field
from sova.plan.base import Policy, register


@register
class HostStandby(Policy):
    name = "host-standby"
    priority = 20  # saving energy yields to everything else
    summary = "empty hosts go to sleep (or off) after an idle time; migrations wake them"
    schema = {
        "period": Field("duration", 60.0, "how often it looks", lo=0, lo_open=True),
        "idle": Field("duration", 0.0, "how long a host stays empty before it goes down", lo=0),
        "state": Field(
            "str", "sleep", "sleep (ACPI S3, wakes in seconds) or off (S5, boots)", choices=("sleep", "off")
        ),
    }

    def __init__(self, **settings):
        super().__init__(**settings)
        self.empty_since: dict[str, float] = {}

    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        snap = knowledge.latest
        busy = np.bincount(snap.vm_host, minlength=len(snap.hosts)) > 0
        busy[snap.vm_host[snap.vm_migrating]] = True
        on = snap.hosts_on()
        for host, empty in zip(snap.hosts, on & ~busy, strict=True):
            if empty:
                self.empty_since.setdefault(host, snap.time)
            else:
                self.empty_since.pop(host, None)
        idle, state = self.settings["idle"], self.settings["state"]
        return [
            SetHostPower(
                host=host,
                state=state,
                policy=self.name,
                reason=f"no VM for {snap.time - since:.0f} s (idle time {idle:g} s)",
            )
            for host, since in self.empty_since.items()
            if snap.time - since >= idle
        ]
