"""planetlab: replay of a PlanetLab VM's CPU trace (5-minute CPU % samples), times ``scale``."""

from __future__ import annotations

import numpy as np

from sova.sim.workload_kinds.base import Demand, WorkloadKind, register_kind
from sova.sim.workload_kinds.trace_replay import read_group_traces, series_at, stacked, trace_files


@register_kind
class Planetlab(WorkloadKind):
    name = "planetlab"
    order = 70

    def split_entry(self, spec, vms):
        return trace_files(spec, vms)

    def prepare(self, group, specs, step) -> None:
        group.series["cpu"] = stacked(read_group_traces(group, specs))

    def demand(self, group, sim, step: Demand) -> None:
        cpu = series_at(group, "cpu", step.t, step.dt, group.params["scale"], upper=1.0)
        np.add.at(step.cpu, group.vm, cpu * sim.compute.vcpu_cores(group.vm, sim.vms.host))
