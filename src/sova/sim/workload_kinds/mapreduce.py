"""MapReduce jobs (Virtue's Hadoop TeraSort): CPU phases with an all-to-all shuffle between them.

The VMs of one ``[[workloads]]`` entry form one job, run over and over: map (``map`` core-seconds per
VM), shuffle (each VM sends ``shuffle`` bytes, evenly to every other VM of the job), reduce (``reduce``
core-seconds per VM), then ``think`` seconds of tear-down and set-up. Each phase ends when the slowest
VM of the job finishes it (Hadoop's barrier), so one VM sharing its host's CPU holds the whole job back.
A job's completion time is recorded from the start of its map to the end of its reduce.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sova.sim.datapath import VM
from sova.sim.events import JobDone
from sova.sim.workload_kinds.base import Demand, Group, Progress, WorkloadKind, register_kind

MAP, SHUFFLE, REDUCE, THINK = 0, 1, 2, 3


@register_kind
class MapReduce(WorkloadKind):
    name = "mapreduce"
    order = 60

    def register(self, group, sim) -> None:
        group.model = register(group, lambda a, b, kind: sim.add_flow((VM, a), (VM, b), kind))

    def demand(self, group, sim, step: Demand) -> None:
        cpu, net = demands(group, group.model, sim.vm_vcpus, step.dt)
        np.add.at(step.cpu, group.vm, cpu)
        step.flow[group.model.flow] = net

    def advance(self, group, sim, step: Progress) -> None:
        vm, jobs = group.vm, group.model
        share = np.where(step.vm_want[vm] > 0, step.vm_alloc[vm] / np.maximum(step.vm_want[vm], 1e-300), 0.0)
        speed = cores(group, sim.vm_vcpus) * np.minimum(share, 1.0) / step.stretch[sim.vm_host[vm]] * step.run[vm]
        for job, started, finished in advance(group, jobs, speed, step.rate[jobs.flow], sim.t, step.dt):
            sim.events.add(JobDone(job, started, finished))


@dataclass
class Jobs:
    job: np.ndarray  # per workload row: its job (the [[workloads]] entry)
    stage: np.ndarray  # per job
    started: np.ndarray  # per job: when the current run began
    think_left: np.ndarray  # per job
    left: np.ndarray  # per row: core-seconds left in map or reduce
    flow: np.ndarray  # shuffle flows: id, sending row, bytes left
    flow_row: np.ndarray
    flow_left: np.ndarray


def register(g: Group, add_flow: Callable[[int, int, str], int]) -> Jobs:
    """One flow per ordered pair of VMs in a job; every job starts in its map phase at time 0."""
    _, job = np.unique(g.spec_index, return_inverse=True)
    flow, flow_row = [], []
    for j in range(len(g)):
        for k in np.flatnonzero(job == job[j]):
            if k != j:
                flow.append(add_flow(int(g.vm[j]), int(g.vm[k]), "shuffle"))
                flow_row.append(j)
    n_jobs = int(job.max()) + 1 if len(job) else 0
    return Jobs(
        job=job,
        stage=np.full(n_jobs, MAP),
        started=np.zeros(n_jobs),
        think_left=np.zeros(n_jobs),
        left=g.params["map"].copy(),
        flow=np.array(flow, dtype=np.int64),
        flow_row=np.array(flow_row, dtype=np.int64),
        flow_left=np.zeros(len(flow)),
    )


def cores(g: Group, vcpus: np.ndarray) -> np.ndarray:
    """Cores each row keeps busy while it computes."""
    c = g.params["cores"]
    return np.minimum(np.where(c > 0, c, vcpus[g.vm]), vcpus[g.vm])


def demands(g: Group, jobs: Jobs, vcpus: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """CPU demand per row and network demand per shuffle flow for the coming step (a flow asks for no more
    than its bytes left, so it stops at its last byte)."""
    stage = jobs.stage[jobs.job]
    computing = ((stage == MAP) | (stage == REDUCE)) & (jobs.left > 0)
    cpu = np.where(computing, cores(g, vcpus), 0.0)
    sending = (stage[jobs.flow_row] == SHUFFLE) & (jobs.flow_left > 0)
    return cpu, np.where(sending, jobs.flow_left * 8 / dt, 0.0)


def advance(
    g: Group, jobs: Jobs, speed: np.ndarray, flow_rate: np.ndarray, t: float, dt: float
) -> list[tuple[int, float, float]]:
    """Progress by one step (speed: core-seconds per second each row gets); returns finished jobs
    as (job, start, end)."""
    stage = jobs.stage[jobs.job]
    computing = (stage == MAP) | (stage == REDUCE)
    jobs.left = np.where(computing, np.maximum(jobs.left - speed * dt, 0.0), jobs.left)
    jobs.flow_left = np.maximum(jobs.flow_left - flow_rate * dt / 8, 0.0)
    jobs.think_left = np.maximum(jobs.think_left - dt, 0.0)
    end = t + dt
    finished = []
    n = np.bincount(jobs.job, minlength=len(jobs.stage))
    for b in range(len(jobs.stage)):
        while _next_stage(g, jobs, b, n[b], end, finished):
            pass  # an empty phase (no shuffle bytes, no work) passes at once
    return finished


def _next_stage(g: Group, jobs: Jobs, b: int, n: int, end: float, finished: list) -> bool:
    """Move job b to its next phase if every VM finished this one; False if it stays."""
    rows = jobs.job == b
    s = jobs.stage[b]
    if s in (MAP, REDUCE) and (jobs.left[rows] <= 0).all():
        if s == MAP:
            jobs.stage[b] = SHUFFLE
            mine = rows[jobs.flow_row]
            jobs.flow_left[mine] = g.params["shuffle"][jobs.flow_row[mine]] / max(n - 1, 1)
        else:
            finished.append((b, float(jobs.started[b]), end))
            jobs.stage[b] = THINK
            jobs.think_left[b] = g.params["think"][rows][0]
            return False  # the tear-down takes at least this step
        return True
    if s == SHUFFLE and (jobs.flow_left[rows[jobs.flow_row]] <= 0).all():
        jobs.stage[b] = REDUCE
        jobs.left[rows] = g.params["reduce"][rows]
        return True
    if s == THINK and jobs.think_left[b] <= 0:
        jobs.stage[b] = MAP
        jobs.started[b] = end
        jobs.left[rows] = g.params["map"][rows]
        return True
    return False
