"""transfer: one copy of ``size`` bytes to a peer (scp), from ``start``; the cipher runs on the sender's
CPU, so what the sender's CPU got bounds how fast it sends. Reports the copy's time."""

from __future__ import annotations

import numpy as np

from sova.sim.datapath import NODE, VM
from sova.sim.events import TransferDone
from sova.sim.workload_kinds.base import Demand, Granted, WorkloadKind, register_kind


@register_kind
class Transfer(WorkloadKind):
    name = "transfer"
    order = 40

    def prepare(self, group, specs, step) -> None:
        group.state["sent"] = np.zeros(len(group))
        group.state["done"] = np.zeros(len(group), dtype=bool)

    def register(self, group, sim) -> None:
        outside = (NODE, sim.topology.external)
        group.flows["main"] = np.array(
            [
                sim.network.add_flow((VM, int(vm)), (VM, int(peer)) if peer >= 0 else outside, "transfer")
                for vm, peer in zip(group.vm, group.params["peer"], strict=True)
            ],
            dtype=np.int64,
        )

    def demand(self, group, sim, step: Demand) -> None:
        p = group.params
        running = (step.t + step.dt > p["start"]) & ~group.state["done"]
        # the cipher runs on the sender's CPU: what it got last step bounds how fast it can send
        cost_bit = p["cpu_per_byte"] / 8 + sim.network.guest_cost_bit
        cpu = sim.last_vm_alloc[group.vm] if sim.last_vm_alloc is not None else sim.compute.vm_vcpus[group.vm]
        cpu_bound = np.where(p["cpu_per_byte"] > 0, np.maximum(cpu, 0.05) / cost_bit, np.inf)
        step.flow[group.flows["main"]] = np.where(running, cpu_bound, 0.0)
        offered = np.minimum(cpu_bound, sim.network.nic_bw[sim.vms.host[group.vm]])
        np.add.at(step.cpu, group.vm, np.where(running, offered * p["cpu_per_byte"] / 8, 0.0))

    def advance(self, group, sim, step: Granted) -> None:
        flows, size, state = group.flows["main"], group.params["size"], group.state
        moved = step.rate[flows] * step.dt / 8
        before = state["sent"].copy()
        state["sent"] = np.minimum(before + moved, size)
        finished = ~state["done"] & (state["sent"] >= size * (1 - 1e-12))
        for i in np.flatnonzero(finished):
            part = (size[i] - before[i]) / max(moved[i], 1e-300)  # of the step, to the last byte
            step.rate[flows[i]] *= part  # the copy stops at its last byte: nothing is counted after it
            sim.events.add(TransferDone(int(i), float(sim.t + part * step.dt - group.params["start"][i])))
        state["done"] |= finished
