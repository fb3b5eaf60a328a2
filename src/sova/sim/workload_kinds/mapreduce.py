"""MapReduce jobs (Virtue's Hadoop TeraSort, CloudScope's TPC-H jobs): map, an all-to-all shuffle, reduce.

The VMs of one ``[[workloads]]`` entry form one job, run over and over: map, shuffle (each VM sends
``shuffle`` bytes, evenly to every other VM of the job), reduce, then ``think`` seconds of tear-down and
set-up. By default each VM does one map and one reduce of ``map`` and ``reduce`` core-seconds on all its
vCPUs. With ``mappers`` (``reducers``) the job has that many tasks, dealt round-robin to its VMs, each of
``map`` (``reduce``) core-seconds on one core, a VM running at most one task per vCPU at once (Hadoop's
slots): a 1:1 job keeps one core of one VM busy, a 58:8 job all of them. A map task may read
``map_read`` bytes from its VM's disk and a reduce task write ``reduce_write`` bytes, in ``io_size``
requests, one outstanding per running task; a task's phase ends when its CPU work and its IO are done.
Each phase ends when the slowest VM of the job finishes it (Hadoop's barrier). A job's completion time
runs from the start of its map to the end of its reduce; its map and reduce phases are timed too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sova.sim.datapath import VM
from sova.sim.events import JobDone
from sova.sim.workload_kinds.base import Demand, Granted, Group, IOStreams, WorkloadKind, register_kind

MAP, SHUFFLE, REDUCE, THINK = 0, 1, 2, 3


@register_kind
class MapReduce(WorkloadKind):
    name = "mapreduce"
    order = 60

    def register(self, group, sim) -> None:
        group.model = register(group, lambda a, b, kind: sim.network.add_flow((VM, a), (VM, b), kind))

    def io_vms(self, group) -> np.ndarray:
        return group.vm[group.model.io_rows]

    def demand(self, group, sim, step: Demand) -> None:
        cpu, net = demands(group, group.model, sim.compute.vm_vcpus, step.dt)
        np.add.at(step.cpu, group.vm, cpu)
        step.flow[group.model.flow] = net

    def io(self, group, sim, t, dt) -> IOStreams | None:
        jobs, p = group.model, group.params
        rows = jobs.io_rows
        if not len(rows):
            return None
        stage = jobs.stage[jobs.job[rows]]
        reading = (stage == MAP) & (jobs.read_left[rows] > 0)
        writing = (stage == REDUCE) & (jobs.write_left[rows] > 0)
        depth = np.maximum(slots(group, jobs, sim.compute.vm_vcpus)[rows], 1.0)
        # as fast as the requests outstanding go, but no more than the bytes left (it stops at its last)
        reads = np.where(reading, jobs.read_left[rows] / p["io_size"][rows] / dt, 0.0)
        writes = np.where(writing, jobs.write_left[rows] / p["io_size"][rows] / dt, 0.0)
        both = np.concatenate
        return IOStreams(
            both([group.vm[rows], group.vm[rows]]),
            both([reads, writes]),
            both([p["io_size"][rows], p["io_size"][rows]]),
            both([np.ones(len(rows)), np.zeros(len(rows))]),
            both([depth, depth]),
            np.ones(2 * len(rows), dtype=bool),  # a split is read, an output written, from start to end
        )

    def advance(self, group, sim, step: Granted) -> None:
        vm, jobs, p = group.vm, group.model, group.params
        share = np.where(step.vm_want[vm] > 0, step.vm_alloc[vm] / np.maximum(step.vm_want[vm], 1e-300), 0.0)
        speed = slots(group, jobs, sim.compute.vm_vcpus) * np.minimum(share, 1.0) / step.stretch[sim.vms.host[vm]]
        served = sim.storage.served(self.name)
        if served is not None:
            rows, n = jobs.io_rows, len(jobs.io_rows)
            jobs.read_left[rows] -= served[:n] * p["io_size"][rows] * step.dt
            jobs.write_left[rows] -= served[n:] * p["io_size"][rows] * step.dt
        for done in advance(group, jobs, speed * step.run[vm], step.rate[jobs.flow], sim.t, step.dt):
            sim.events.add(done)


@dataclass
class Jobs:
    job: np.ndarray  # per workload row: its job (the [[workloads]] entry)
    stage: np.ndarray  # per job
    started: np.ndarray  # per job: when the current run began
    map_end: np.ndarray  # per job: when the current run's map ended
    reduce_start: np.ndarray  # per job: when the current run's reduce began
    think_left: np.ndarray  # per job
    map_tasks: np.ndarray  # per row: map tasks it runs (1 each without mappers)
    reduce_tasks: np.ndarray  # per row
    io_rows: np.ndarray  # the rows whose tasks read or write disk (they have IO streams and flows)
    left: np.ndarray  # per row: core-seconds left in map or reduce
    read_left: np.ndarray  # per row: bytes its map tasks still read
    write_left: np.ndarray  # per row: bytes its reduce tasks still write
    flow: np.ndarray  # shuffle flows: id, sending row, bytes left
    flow_row: np.ndarray
    flow_left: np.ndarray


def deal(job: np.ndarray, tasks: np.ndarray) -> np.ndarray:
    """Tasks per row: each job's tasks dealt round-robin to its rows (0 tasks: one per row)."""
    out = np.ones(len(job))
    for b in np.unique(job):
        rows = np.flatnonzero(job == b)
        n_tasks = int(tasks[rows[0]])
        if n_tasks:
            out[rows] = n_tasks // len(rows) + (np.arange(len(rows)) < n_tasks % len(rows))
    return out


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
    map_tasks, reduce_tasks = deal(job, g.params["mappers"]), deal(job, g.params["reducers"])
    return Jobs(
        job=job,
        stage=np.full(n_jobs, MAP),
        started=np.zeros(n_jobs),
        map_end=np.zeros(n_jobs),
        reduce_start=np.zeros(n_jobs),
        think_left=np.zeros(n_jobs),
        map_tasks=map_tasks,
        reduce_tasks=reduce_tasks,
        io_rows=np.flatnonzero((g.params["map_read"] > 0) | (g.params["reduce_write"] > 0)),
        left=g.params["map"] * map_tasks,
        read_left=g.params["map_read"] * map_tasks,
        write_left=np.zeros(len(job)),
        flow=np.array(flow, dtype=np.int64),
        flow_row=np.array(flow_row, dtype=np.int64),
        flow_left=np.zeros(len(flow)),
    )


def slots(g: Group, jobs: Jobs, vcpus: np.ndarray) -> np.ndarray:
    """Cores each row keeps busy while it computes: its vCPUs (or ``cores``), and with tasks counted, at
    most one per task of its current phase."""
    c = g.params["cores"]
    base = np.minimum(np.where(c > 0, c, vcpus[g.vm]), vcpus[g.vm])
    in_reduce = jobs.stage[jobs.job] == REDUCE
    tasks = np.where(in_reduce, jobs.reduce_tasks, jobs.map_tasks)
    counted = np.where(in_reduce, g.params["reducers"], g.params["mappers"]) > 0
    return np.where(counted, np.minimum(base, tasks), base)


def demands(g: Group, jobs: Jobs, vcpus: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """CPU demand per row and network demand per shuffle flow for the coming step (a flow asks for no more
    than its bytes left, so it stops at its last byte)."""
    stage = jobs.stage[jobs.job]
    computing = ((stage == MAP) | (stage == REDUCE)) & (jobs.left > 0)
    cpu = np.where(computing, slots(g, jobs, vcpus), 0.0)
    sending = (stage[jobs.flow_row] == SHUFFLE) & (jobs.flow_left > 0)
    return cpu, np.where(sending, jobs.flow_left * 8 / dt, 0.0)


def advance(g: Group, jobs: Jobs, speed: np.ndarray, flow_rate: np.ndarray, t: float, dt: float) -> list[JobDone]:
    """Progress by one step (speed: core-seconds per second each row gets); returns the jobs finished."""
    stage = jobs.stage[jobs.job]
    computing = (stage == MAP) | (stage == REDUCE)
    jobs.left = np.where(computing, np.maximum(jobs.left - speed * dt, 0.0), jobs.left)
    jobs.flow_left = np.maximum(jobs.flow_left - flow_rate * dt / 8, 0.0)
    jobs.think_left = np.maximum(jobs.think_left - dt, 0.0)
    end = t + dt
    finished: list[JobDone] = []
    n = np.bincount(jobs.job, minlength=len(jobs.stage))
    for b in range(len(jobs.stage)):
        while _next_stage(g, jobs, b, n[b], end, finished):
            pass  # an empty phase (no shuffle bytes, no work) passes at once
    return finished


def _next_stage(g: Group, jobs: Jobs, b: int, n: int, end: float, finished: list[JobDone]) -> bool:
    """Move job b to its next phase if every VM finished this one; False if it stays."""
    rows = jobs.job == b
    s = jobs.stage[b]
    if s == MAP and (jobs.left[rows] <= 0).all() and (jobs.read_left[rows] <= 0).all():
        jobs.stage[b] = SHUFFLE
        jobs.map_end[b] = end
        mine = rows[jobs.flow_row]
        jobs.flow_left[mine] = g.params["shuffle"][jobs.flow_row[mine]] / max(n - 1, 1)
        return True
    if s == REDUCE and (jobs.left[rows] <= 0).all() and (jobs.write_left[rows] <= 0).all():
        started = float(jobs.started[b])
        finished.append(JobDone(b, started, end, float(jobs.map_end[b]) - started, end - float(jobs.reduce_start[b])))
        jobs.stage[b] = THINK
        jobs.think_left[b] = g.params["think"][rows][0]
        return False  # the tear-down takes at least this step
    if s == SHUFFLE and (jobs.flow_left[rows[jobs.flow_row]] <= 0).all():
        jobs.stage[b] = REDUCE
        jobs.reduce_start[b] = end
        jobs.left[rows] = g.params["reduce"][rows] * jobs.reduce_tasks[rows]
        jobs.write_left[rows] = g.params["reduce_write"][rows] * jobs.reduce_tasks[rows]
        return True
    if s == THINK and jobs.think_left[b] <= 0:
        jobs.stage[b] = MAP
        jobs.started[b] = end
        jobs.left[rows] = g.params["map"][rows] * jobs.map_tasks[rows]
        jobs.read_left[rows] = g.params["map_read"][rows] * jobs.map_tasks[rows]
        return True
    return False
