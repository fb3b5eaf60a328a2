"""planetlab: replay of a PlanetLab VM's CPU trace (5-minute CPU % samples), times ``scale``, each sample
held until the next or (``interpolate``) on a line to it, ``lead`` seconds ahead of the clock.

With ``leave = "idle"`` a VM is deleted for good at sample k >= 1 where its trace reads 0 and so does the next
sample (the last one counted twice), which is when CloudSim 3.0.3's interpolated demand at the update
after sample k (k x 300 + 0.1 s) is 0 and its datacenter destroys the VM (docs/cloudsim-reference.md §8).
"""

from __future__ import annotations

import numpy as np

from sova.sim.workload_kinds.base import Demand, WorkloadKind, register_kind
from sova.sim.workload_kinds.trace_replay import read_group_traces, series_at, stacked, trace_files


@register_kind
class Planetlab(WorkloadKind):
    name = "planetlab"
    order = 70

    def split_entry(self, spec, vms):
        return trace_files(spec, len(vms))

    def prepare(self, group, specs, step) -> None:
        group.series["cpu"] = stacked(read_group_traces(group, specs))

    def departures(self, group) -> np.ndarray:
        """Per instance: when it leaves for good (inf: never), by its ``leave``."""
        return idle_departures(
            group.series["cpu"], group.params["interval"], group.params["offset"], group.params["leave"]
        )

    def demand(self, group, sim, step: Demand) -> None:
        params = group.params
        at = step.t + params["lead"]
        if params["interpolate"].any():
            held = series_at(group, "cpu", at, step.dt, params["scale"], upper=1.0)
            cpu = np.where(params["interpolate"], interpolated(group, at, params["scale"]), held)
        else:
            cpu = series_at(group, "cpu", at, step.dt, params["scale"], upper=1.0)
        np.add.at(step.cpu, group.vm, cpu * sim.compute.vcpu_cores(group.vm, sim.vms.host))


def interpolated(group, at: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Each instance's CPU share at time `at` on the line between the samples either side (the last one
    held past the end), times `scale`, at most 1: CloudSim's reading of a PlanetLab trace."""
    cpu = group.series["cpu"]
    position = np.maximum((at + group.params["offset"]) / group.params["interval"], 0.0)
    last = cpu.shape[1] - 1
    low = np.minimum(np.floor(position).astype(np.int64), last)
    rows = np.arange(len(cpu))
    below, above = cpu[rows, low], cpu[rows, np.minimum(low + 1, last)]
    share = below + (above - below) * np.clip(position - low, 0.0, 1.0)
    return np.clip(share * scale, 0.0, 1.0)


def idle_departures(cpu: np.ndarray, interval: np.ndarray, offset: np.ndarray, leave: np.ndarray) -> np.ndarray:
    """Per row of `cpu` (instances x samples): the time of the first sample k >= 1 that reads 0 with the next
    one 0 too (the last sample repeated), for the rows whose `leave` is 'idle'; inf for the others."""
    padded = np.concatenate([cpu, cpu[:, -1:]], axis=1)
    idle = (padded[:, 1:-1] == 0) & (padded[:, 2:] == 0)  # sample k = 1.. and k + 1
    first = np.where(idle.any(axis=1), idle.argmax(axis=1) + 1, -1)
    leaves = (np.asarray(leave) == "idle") & (first > 0)
    return np.where(leaves, first * np.asarray(interval, dtype=float) - np.asarray(offset, dtype=float), np.inf)
