"""CloudScope's Algorithm 1 for VMs that arrive: each request goes to the host where the V-slowdown model
predicts it least slowed, among the hosts with its memory, vCPUs (4 per core) and VF.

Algorithm 1 needs the VM's loading vector, which an arriving VM has not shown yet: it is taken as
CPU-bound (β = 1, 0, 0) with its vCPUs half busy, a stated assumption, and the hosts' loads are learned
from the last ``WINDOW`` seconds of the Knowledge. Each placement is added to its host's load before the
next request of the batch is placed. Without two snapshots of these hosts yet (the first seconds of a run)
it places as first fit does.
"""

from __future__ import annotations

import numpy as np

from sova.analyze.loading_vectors import host_load, window_usage
from sova.analyze.vslowdown import VmLoad, slowdown_if_placed, with_vm
from sova.model.knowledge import Knowledge
from sova.model.snapshot import Snapshot, VmRequest
from sova.plan.admission_policies import AdmissionPolicy, Chooser, register_admission
from sova.plan.first_fit import first_host

WINDOW = 60.0  # s of reports the hosts' loads are learned over
ASSUMED_UTIL = 0.5  # share of its vCPUs an arriving VM is taken to keep busy
CPU_BOUND = np.array([1.0, 0.0, 0.0])


@register_admission
class CloudScopeAdmission(AdmissionPolicy):
    name = "cloudscope"
    summary = "the host where CloudScope's model predicts the VM least slowed (Algorithm 1; taken as CPU-bound)"

    def chooser(self, snapshot: Snapshot, knowledge: Knowledge) -> Chooser:
        usage = window_usage(knowledge, WINDOW)
        if usage is None or usage.snapshot.hosts != snapshot.hosts:
            return first_host  # no reports of these hosts yet
        load = host_load(usage)
        guests = np.bincount(usage.snapshot.vm_host, minlength=len(snapshot.hosts)).astype(float)

        def least_slowed(request: VmRequest, fits: np.ndarray) -> tuple[int, str] | None:
            nonlocal load
            vm = _arriving(request)
            slowdown = slowdown_if_placed(load, vm, guests, CPU_BOUND, -1)
            fits = fits & np.isfinite(slowdown)
            if not fits.any():
                return None
            k = int(np.flatnonzero(fits)[np.argmin(slowdown[fits])])
            load = with_vm(load, vm, guests, np.arange(len(guests)) == k)  # the next request sees it there
            guests[k] += 1
            return k, f"predicted slowdown {slowdown[k]:.2f} there, the least of {int(fits.sum())} hosts with room"

        return least_slowed


def _arriving(request: VmRequest) -> VmLoad:
    return VmLoad(
        cpu_demand=request.vcpus * ASSUMED_UTIL,
        disk_bs=0.0,
        net_tx_bs=0.0,
        net_rx_bs=0.0,
        disk_queue=0.0,
        net_tx_demand=0.0,
        net_rx_demand=0.0,
        weight=256.0,
        dom0_util=0.0,
    )
