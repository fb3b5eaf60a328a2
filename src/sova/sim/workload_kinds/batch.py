"""batch: CPU jobs of ``work`` core-seconds, one after another with ``think`` between (sysbench-like);
reports each job's completion time."""

from __future__ import annotations

import numpy as np

from sova.sim.events import BatchDone
from sova.sim.workload_kinds.base import Demand, Granted, WorkloadKind, register_kind


@register_kind
class Batch(WorkloadKind):
    name = "batch"
    order = 50

    def prepare(self, group, specs, step) -> None:
        group.state["left"] = group.params["work"].copy()
        group.state["think_left"] = np.zeros(len(group))
        group.state["started"] = np.zeros(len(group))

    def _cores(self, group, sim) -> np.ndarray:
        vcpus = sim.compute.vm_vcpus[group.vm]
        return np.minimum(np.where(group.params["cores"] > 0, group.params["cores"], vcpus), vcpus)

    def demand(self, group, sim, step: Demand) -> None:
        running = group.state["think_left"] <= 0
        np.add.at(step.cpu, group.vm, np.where(running, self._cores(group, sim), 0.0))

    def advance(self, group, sim, step: Granted) -> None:
        state, vm, dt = group.state, group.vm, step.dt
        share = np.where(step.vm_want[vm] > 0, step.vm_alloc[vm] / np.maximum(step.vm_want[vm], 1e-300), 0.0)
        thinking = state["think_left"] > 0
        speed = self._cores(group, sim) * np.minimum(share, 1.0) / step.stretch[sim.vms.host[vm]]
        progress = np.where(thinking, 0.0, speed * dt * step.run[vm])
        state["think_left"] = np.maximum(state["think_left"] - dt, 0.0)
        state["left"] -= progress
        done = (state["left"] <= 0) & ~thinking
        if not done.any():
            return
        # finishing time inside the step, by linear interpolation
        over = -state["left"][done] / np.maximum(progress[done], 1e-300) * dt
        finish = sim.t + dt - over
        for i, at in zip(np.flatnonzero(done), finish, strict=True):
            sim.events.add(BatchDone(int(vm[i]), float(at - state["started"][i])))
        # the rest of the step goes to thinking, then to the next job at the same speed
        think = group.params["think"][done]
        state["started"][done] = finish + think
        state["think_left"][done] = np.maximum(think - over, 0.0)
        state["left"][done] = group.params["work"][done] - speed[done] * np.maximum(over - think, 0.0)
