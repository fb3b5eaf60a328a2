"""lookbusy: a CPU burner at a load level ``util``, running a fraction ``duty`` of every ``period``."""

from __future__ import annotations

import numpy as np

from sova.sim.workload_kinds.base import Demand, WorkloadKind, on_fraction, register_kind


@register_kind
class Lookbusy(WorkloadKind):
    name = "lookbusy"
    order = 10

    def demand(self, group, sim, step: Demand) -> None:
        on = on_fraction(step.t, step.dt, group.params["period"], group.params["duty"], group.phase)
        np.add.at(step.cpu, group.vm, on * group.params["util"] * sim.compute.vcpu_cores(group.vm, sim.vms.host))
