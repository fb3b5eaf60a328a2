"""netperf: a TCP stream to or from a peer (a VM or outside), on for ``duty`` of every ``period``."""

from __future__ import annotations

import numpy as np

from sova.sim.datapath import NODE, VM
from sova.sim.workload_kinds.base import Demand, WorkloadKind, on_fraction, register_kind


@register_kind
class Netperf(WorkloadKind):
    name = "netperf"
    order = 20

    def register(self, group, sim) -> None:
        outside = (NODE, sim.topology.external)
        ids = []
        for vm, peer, direction in zip(group.vm, group.params["peer"], group.params["direction"], strict=True):
            mine, theirs = (VM, int(vm)), (VM, int(peer)) if peer >= 0 else outside
            src, dst = (mine, theirs) if direction == "tx" else (theirs, mine)
            ids.append(sim.network.add_flow(src, dst, "netperf"))
        group.flows["main"] = np.array(ids, dtype=np.int64)

    def demand(self, group, sim, step: Demand) -> None:
        on = on_fraction(step.t, step.dt, group.params["period"], group.params["duty"], group.phase)
        rate = np.where(group.params["rate"] > 0, group.params["rate"], np.inf)
        step.flow[group.flows["main"]] = np.where(on > 0, rate, 0.0)
        step.flow_scale[group.flows["main"]] = on  # on for part of the step: carries that part
