"""CloudScope's adaptive Dom0 (the CloudScope paper, §IV-B, Eq. 8): raise the hypervisor's CPU weight on a
host where a VM misses its slowdown SLO while the host's CPUs are not saturated.

Every ``period``, over the last ``window`` seconds: a VM predicted slower than ``slowdown_slo`` (the
``interference`` findings) violates its SLO. On a host with a violation whose CPUs are not oversubscribed
(Σ pCPU > Σ util · vCPU, the paper's condition), the weight Dom0 needs is
Eq. 7 solved for p_Dom0 and Eq. 8 for the weight (``vslowdown.dom0_weight_needed``), the largest any
violating VM needs, rounded up to a multiple of ``weight_step`` (the paper computed "> 425" and set 512)
and at most ``max_weight`` (Xen's credit scheduler takes 1-65535). A violation no Dom0 weight can fix
(the VM would miss the SLO with p_Dom0 = 1) is left alone. The weight is only raised: a host whose Dom0
already weighs that much, or does not report its weight (KVM), is left as it is.
"""

from __future__ import annotations

import math

import numpy as np

from sova.analyze.findings import Findings
from sova.analyze.interference import Slowdown
from sova.analyze.loading_vectors import host_load, loading_vectors, window_usage
from sova.analyze.vslowdown import dom0_weight_needed
from sova.model.actions import Action, SetDom0Weight
from sova.model.knowledge import Knowledge
from sova.model.schema import Field
from sova.plan.base import Policy, register


@register
class AdaptiveDom0(Policy):
    name = "cloudscope-dom0"
    priority = 40  # a host-level tuning yields to a move
    loop = "local"
    summary = "raise Dom0's CPU weight where a VM misses its slowdown SLO on an unsaturated host (Eq. 8)"
    schema = {
        "period": Field("duration", 30.0, "how often the policy runs", lo=0, lo_open=True),
        "window": Field("duration", 30.0, "seconds the loads are learned over", lo=0, lo_open=True),
        "slowdown_slo": Field("float", 1.2, "a VM predicted slower than this misses its SLO", lo=1),
        "weight_step": Field("int", 256, "the weight is set to a multiple of this", lo=1),
        "max_weight": Field("int", 65535, "the most weight Dom0 is given (Xen's credit scheduler: 65535)", lo=1),
    }
    analyzers = {"interference": {"slowdown_above": "slowdown_slo"}}
    ordered = (("weight_step", "max_weight"),)

    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        p = self.settings
        violating = {f.vm for f in findings.of(Slowdown) if f.slowdown > p["slowdown_slo"]}
        usage = window_usage(knowledge, p["window"]) if violating else None
        if usage is None:
            return []
        snap = usage.snapshot
        load = host_load(usage)
        saturated = load.cpu_demand >= load.cpu_capacity  # the paper acts only where Σ pCPU > Σ util · vCPU
        vms = np.array([snap.vm_position[vm] for vm in violating], dtype=np.int64)
        needed = dom0_weight_needed(load, loading_vectors(usage)[vms], snap.vm_host[vms], p["slowdown_slo"])
        actions: list[Action] = []
        for h in np.unique(snap.vm_host[vms]):
            if saturated[h]:
                continue
            wanted = needed[(snap.vm_host[vms] == h) & np.isfinite(needed)]
            if not len(wanted):
                continue  # no Dom0 weight can bring these VMs within the SLO: the cause is elsewhere
            want = float(wanted.max())
            weight = min(math.ceil(want / p["weight_step"]) * p["weight_step"], p["max_weight"])
            if not np.isfinite(load.dom0_weight[h]) or weight <= load.dom0_weight[h]:
                continue
            worst = max((f for f in findings.of(Slowdown) if f.host == snap.hosts[h]), key=lambda f: f.slowdown)
            actions.append(
                SetDom0Weight(
                    snap.hosts[h],
                    weight,
                    policy=self.name,
                    reason=f"{worst.vm} predicted {worst.slowdown:.2f}x slower than alone (SLO {p['slowdown_slo']:g}); "
                    f"Dom0 needs weight {want:.0f} (Eq. 8), set to {weight}",
                )
            )
        return actions
