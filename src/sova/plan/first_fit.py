"""First fit: each request goes to the first host, in inventory order, with room for it (the default
admission policy, as CloudSim's VmAllocationPolicySimple and Nova's filter scheduler without weighers)."""

from __future__ import annotations

import numpy as np

from sova.model.actions import CreateVM
from sova.model.knowledge import Knowledge
from sova.model.snapshot import Snapshot, VmRequest
from sova.plan.admission import AdmissionPolicy, HostRoom, register_admission

CPU_RATIO = 4.0  # vCPUs per host core a host may hold: Nova's initial_cpu_allocation_ratio default


@register_admission
class FirstFit(AdmissionPolicy):
    name = "first-fit"
    summary = "the first host with the memory, vCPUs (4 per core) and VF the VM needs"

    def admit(self, snapshot: Snapshot, requests: list[VmRequest], knowledge: Knowledge) -> list[CreateVM]:
        room = HostRoom(snapshot, CPU_RATIO)
        out = []
        for request in requests:
            hosts = np.flatnonzero(room.fits(request))
            if not len(hosts):
                continue
            host = int(hosts[0])
            room.take(host, request)
            out.append(
                CreateVM(
                    request.name,
                    snapshot.hosts[host],
                    policy=self.name,
                    reason=f"first host with {request.memory:.0f} MiB and {request.vcpus} vCPUs free",
                )
            )
        return out
