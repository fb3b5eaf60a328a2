"""First fit: each request goes to the first host, in inventory order, with room for it (the default
admission policy, as CloudSim's VmAllocationPolicySimple and Nova's filter scheduler without weighers)."""

from __future__ import annotations

import numpy as np

from sova.model.knowledge import Knowledge
from sova.model.snapshot import Snapshot, VmRequest
from sova.plan.admission_policies import AdmissionPolicy, Chooser, register_admission


def first_host(request: VmRequest, fits: np.ndarray) -> tuple[int, str] | None:
    hosts = np.flatnonzero(fits)
    if not len(hosts):
        return None
    return int(hosts[0]), f"first host with {request.memory:.0f} MiB and {request.vcpus} vCPUs free"


@register_admission
class FirstFit(AdmissionPolicy):
    name = "first-fit"
    summary = "the first host with the memory, vCPUs (4 per core) and VF the VM needs"

    def chooser(self, snapshot: Snapshot, knowledge: Knowledge) -> Chooser:
        return first_host
