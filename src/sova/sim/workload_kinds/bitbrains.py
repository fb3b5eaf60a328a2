"""bitbrains: replay of a Bitbrains GWA-T-12 VM (CPU, memory in use, disk and network throughput), times
``scale``. Disk throughput becomes IOs of 16 KiB; network throughput a flow to and from outside. A VM
with ``from_trace`` takes its vCPUs and memory from its trace (the most it was provisioned) and runs from
the start to the end, placed by the admission policy."""

from __future__ import annotations

import numpy as np

from sova.sim.datapath import NODE, VM
from sova.sim.lifetime_traces import VMLifetimeTrace
from sova.sim.workload_kinds.base import Demand, IOStreams, WorkloadKind, register_kind
from sova.sim.workload_kinds.trace_replay import read_group_traces, series_at, stacked, trace_files

IO_SIZE = 16384.0  # bytes per IO of a Bitbrains trace's disk throughput
SERIES = ("cpu", "mem_used", "disk_read", "disk_write", "net_rx", "net_tx")


@register_kind
class Bitbrains(WorkloadKind):
    name = "bitbrains"
    order = 80
    does_io = True

    def split_entry(self, spec, vms):
        return trace_files(spec, len(vms))

    def prepare(self, group, specs, step) -> None:
        loaded = read_group_traces(group, specs)
        group.model = loaded
        for key in SERIES:
            group.series[key] = stacked([getattr(trace, key) for trace in loaded])

    def lifetimes(self, group) -> list[VMLifetimeTrace]:
        """Each row's size as its trace gives it; a Bitbrains VM lives the whole run."""
        return [
            VMLifetimeTrace(file, 0.0, np.inf, trace.cores, trace.memory_mib, float(interval), trace.cpu)
            for file, trace, interval in zip(group.params["file"], group.model, group.params["interval"], strict=True)
        ]

    def register(self, group, sim) -> None:
        outside = (NODE, sim.topology.external)
        group.flows["tx"] = np.array([sim.network.add_flow((VM, int(v)), outside, "trace") for v in group.vm])
        group.flows["rx"] = np.array([sim.network.add_flow(outside, (VM, int(v)), "trace") for v in group.vm])

    def demand(self, group, sim, step: Demand) -> None:
        t, dt, scale, vm = step.t, step.dt, group.params["scale"], group.vm
        np.add.at(
            step.cpu, vm, series_at(group, "cpu", t, dt, scale, upper=1.0) * sim.compute.vcpu_cores(vm, sim.vms.host)
        )
        step.flow[group.flows["tx"]] = series_at(group, "net_tx", t, dt) * 8 * scale
        step.flow[group.flows["rx"]] = series_at(group, "net_rx", t, dt) * 8 * scale
        sim.vms.memory_used[vm] = np.minimum(series_at(group, "mem_used", t, dt), sim.vms.memory[vm])

    def io(self, group, sim, t, dt) -> IOStreams:
        scale = group.params["scale"]
        read, write = series_at(group, "disk_read", t, dt) * scale, series_at(group, "disk_write", t, dt) * scale
        total = read + write
        return IOStreams(
            group.vm,
            total / IO_SIZE,
            np.full(len(group), IO_SIZE),
            np.where(total > 0, read / np.maximum(total, 1e-300), 0.5),
            np.zeros(len(group)),  # a trace's rate is what the VM did: open loop
        )
