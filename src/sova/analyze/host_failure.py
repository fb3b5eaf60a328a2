"""The hosts declared failed: each host the runtime declared failed (silent for ``failure_grace``, a must
rule now keeping every VM off it), with when it last reported, the VMs still on it, and whether it is
fenced (it runs no VM any more: its VMs may start elsewhere).

``ha-restart`` plans from these findings, so every restart's audit entry rests on the failure it answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sova.analyze.base import Analyzer, register
from sova.analyze.findings import Finding
from sova.model.knowledge import Knowledge
from sova.model.placement_rules import hosts_failed, hosts_fenced


@dataclass(frozen=True)
class HostFailed(Finding, kind="host-failed"):
    """A host declared failed, when it last reported, how many VMs it still holds, whether it is fenced."""

    host: str
    last_report: float  # driver time of its last report (s; NaN: its driver does not say)
    vms: int
    fenced: bool = False

    def describe(self) -> str:
        fenced = ", fenced" if self.fenced else ""
        return f"{self.host} failed: silent since {self.last_report:.0f} s, {self.vms} VMs on it{fenced}"


@register
class HostFailures(Analyzer):
    name = "failed-hosts"
    summary = "the hosts declared failed, in the order they failed, with their last report and VMs"

    def analyze(self, knowledge: Knowledge, settings: Mapping[str, Any]) -> tuple[HostFailed, ...]:
        if not len(knowledge):
            return ()
        snap = knowledge.latest
        on_host = np.bincount(snap.vm_host, minlength=len(snap.hosts))
        seen = snap.host_seen if snap.host_seen is not None else np.full(len(snap.hosts), np.nan)
        at = snap.host_position
        fenced = set(hosts_fenced(knowledge.rules))
        return tuple(
            HostFailed(host, float(seen[at[host]]), int(on_host[at[host]]), host in fenced)
            for host in hosts_failed(knowledge.rules)
            if host in at
        )
