"""Replay of traces that say when each VM lived (Azure V1, OpenDC): CPU from the trace, and each VM's
arrival, departure, vCPUs and memory for the VMs that take their lifetime from it (``from_trace``).

A trace's VMs, in order of arrival, map onto the entry's VMs in name order; an entry with fewer VMs
than the trace takes the earliest. A VM's CPU series starts at its arrival.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sova.sim.lifetime_traces import VMLifetimeTrace
from sova.sim.traces import TraceError
from sova.sim.workload_kinds.base import Demand, WorkloadKind
from sova.sim.workload_kinds.trace_replay import series_at, stacked


class LifetimeReplay(WorkloadKind):
    """The part azure and opendc share; a subclass names its reader."""

    read: Callable[[str], list[VMLifetimeTrace]]

    def split_entry(self, spec, names):
        vms = len(names)
        traces = self._traces(spec.params["file"], spec.where)
        if len(traces) < vms:
            raise TraceError(
                f"{spec.where or 'a workload'}.file: {spec.params['file']} holds {len(traces)} VM(s) for {vms} VMs; "
                "expected one trace VM per VM the entry names (fewer VMs, or a larger trace)"
            )
        return [{"trace_vm": k} for k in range(vms)]

    def prepare(self, group, specs, step) -> None:
        traces = {file: self._traces(file, "") for file in set(group.params["file"])}  # each read once
        lives = [traces[file][int(k)] for file, k in zip(group.params["file"], group.params["trace_vm"], strict=True)]
        group.model = lives
        group.series["cpu"] = stacked([life.cpu if len(life.cpu) else np.zeros(1) for life in lives])
        group.params["interval"] = np.array([life.interval_s for life in lives])
        group.params["offset"] = -np.array([life.arrive_s for life in lives])  # the series starts at arrival

    def lifetimes(self, group) -> list[VMLifetimeTrace]:
        """Each row's life as its trace tells it."""
        return group.model

    def demand(self, group, sim, step: Demand) -> None:
        cpu = series_at(group, "cpu", step.t, step.dt, group.params["scale"], upper=1.0)
        np.add.at(step.cpu, group.vm, cpu * sim.compute.vcpu_cores(group.vm, sim.vms.host))

    def _traces(self, file: str, where: str) -> list[VMLifetimeTrace]:
        try:
            return type(self).read(file)
        except TraceError as exc:
            raise TraceError(f"{where or 'a workload'}.file: {exc}") from None
