"""Virtue's method (§V): many Random placements, each re-placed by every profile, and every result run.

Trial k draws a Random placement (at most ``slots`` VMs per host; seeded by the scenario's seed and k),
runs the scenario on it with no policy, and measures that run as a real deployment would (CPU, the
traffic matrix from flow counters, NIC counters; ``placement.measure``). Each profile's placement policy
then re-places the VMs from that measurement, and the scenario runs again on the new placement. With
``iterations`` > 1 a profile measures its own placement's run and re-places again (the paper's Fig. 6).

Outcomes of a run, after the warm-up: web requests/s (in all and per web workload entry, a tenant) and
MapReduce job completion times. Beside them: the optimizer's runtime, its objective on the problem it
was given and, for Model, the gap HiGHS reached.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix

from sova.control.profiles import build_policies
from sova.experiments.parallel import run_all
from sova.experiments.place import run_and_measure
from sova.model.scenario import Scenario
from sova.model.schema import InputError
from sova.model.schema import Problem as InputProblem
from sova.plan.placement.fabric import levels_for
from sova.plan.placement.minimax import Evaluator
from sova.plan.placement.problem import PlacementProblem
from sova.plan.placement.random_placement import random_placement
from sova.plan.placement_policies import PlacementPolicy
from sova.sim.engine import Simulator
from sova.sim.events import JobDone

TrialProgress = Callable[[int, int], None]
RANDOM = "random"  # the profile name of each trial's Random placement (iteration 0)


@dataclass
class PlacementOutcome:
    """What one run of a placement achieved (None: the scenario has no such workload)."""

    web_rps: float | None
    web_by_tenant: dict[str, float]
    job_time: float | None  # mean completion time of the MapReduce jobs that finished
    jobs_finished: int


@dataclass
class TrialRun:
    trial: int
    profile: str
    iteration: int  # 0: the trial's Random placement
    outcome: PlacementOutcome
    objective: float  # minimax utilization of the placement, on the measurement it was computed from
    seconds: float  # optimizer runtime
    moves: int
    gap: float | None = None  # Model: the relative gap HiGHS reached


def check_trials(scenario: Scenario, profiles: list[str]) -> None:
    """Every profile must hold one placement policy or none (none: the Random placement as it is)."""
    problems = []
    for name in profiles:
        if name not in scenario.profiles:
            problems.append(
                InputProblem(
                    "--profile", f"unknown profile {name!r}; the scenario defines {', '.join(scenario.profiles)}"
                )
            )
            continue
        pols = build_policies(scenario, scenario.profiles[name])
        if len(pols) > 1 or any(not isinstance(p, PlacementPolicy) for p in pols):
            problems.append(
                InputProblem(
                    f"{scenario.source}: [profiles.{name}].policies",
                    "a [trials] scenario compares placement algorithms; expected one placement policy or none",
                )
            )
    if problems:
        raise InputError(problems)


def run_trials(
    scenario: Scenario, profiles: list[str] | None = None, jobs: int = 0, progress: TrialProgress | None = None
) -> list[TrialRun]:
    """Every trial of the scenario's [trials] for every profile; trials run in `jobs` processes."""
    spec = scenario.trials
    if spec is None:
        raise ValueError("the scenario has no [trials] table")
    names = profiles or list(scenario.profiles)
    check_trials(scenario, names)
    jobs = jobs or os.cpu_count() or 1
    done = (lambda n: progress(n, spec.count)) if progress else None
    per_trial = run_all(functools.partial(run_trial, scenario, names), list(range(spec.count)), jobs, done=done)
    out = [run for runs in per_trial for run in runs]
    order = {RANDOM: -1} | {name: k for k, name in enumerate(names)}  # each trial's Random placement first
    return sorted(out, key=lambda r: (r.trial, order[r.profile], r.iteration))


def run_trial(scenario: Scenario, profiles: list[str], k: int) -> list[TrialRun]:
    spec = scenario.trials
    rng = np.random.default_rng([scenario.seed, k])
    x0 = random_placement(skeleton(scenario, spec.slots), rng)
    outcome0, problem0 = run_placement(scenario, x0)
    e0 = Evaluator(problem0, "all", x0).value()
    runs = [TrialRun(k, RANDOM, 0, outcome0, e0, 0.0, 0)]
    for name in profiles:
        pols = build_policies(scenario, scenario.profiles[name])
        if not pols:
            if name != RANDOM:
                runs.append(dataclasses.replace(runs[0], profile=name))
            continue
        policy = pols[0]
        problem, x = problem0, x0
        for it in range(1, spec.iterations + 1):
            t0 = time.perf_counter()
            x1 = policy.optimize(problem, x)
            seconds = time.perf_counter() - t0
            objective = Evaluator(problem, "all", x1).value()
            outcome, measured = run_placement(scenario, x1)
            gap = getattr(policy, "last_gap", None)
            runs.append(TrialRun(k, name, it, outcome, objective, seconds, int((x1 != x).sum()), gap))
            problem, x = measured, x1
    return runs


def skeleton(scenario: Scenario, slots: int) -> PlacementProblem:
    """The scenario's VMs and hosts with no measurement yet: enough to draw a Random placement."""
    V, H = len(scenario.vms), len(scenario.hosts)
    return PlacementProblem(
        vm_names=tuple(v.name for v in scenario.vms),
        host_names=tuple(h.name for h in scenario.hosts),
        cpu=np.zeros(V),
        host_cores=np.array([h.cores for h in scenario.hosts], dtype=float),
        traffic=csr_matrix((V, V)),
        levels=levels_for(scenario.topology, H, np.array([h.nic.bandwidth for h in scenario.hosts], dtype=float)),
        slots=slots,
        memory=np.array([v.memory for v in scenario.vms], dtype=float),
        host_memory=np.array([h.memory - h.dom0_memory for h in scenario.hosts], dtype=float),
    )


def with_placement(scenario: Scenario, x: np.ndarray) -> Scenario:
    hosts = [h.name for h in scenario.hosts]
    vms = tuple(dataclasses.replace(v, host=hosts[int(h)]) for v, h in zip(scenario.vms, x, strict=True))
    return dataclasses.replace(scenario, vms=vms)


def run_placement(scenario: Scenario, x: np.ndarray) -> tuple[PlacementOutcome, PlacementProblem]:
    """Run the scenario with the VMs on hosts `x` and no policy: its outcome, and its measurement."""
    spec = scenario.trials
    web: list[np.ndarray] = []
    finished: list[JobDone] = []

    def record(sim: Simulator) -> None:
        if "web_rps" in sim.sensors.gauges:
            web.append(sim.sensors.gauges["web_rps"].copy())
        finished.extend(sim.events.take(JobDone))

    sim, problem = run_and_measure(with_placement(scenario, x), scenario.duration, spec.warmup, spec.slots, record)
    return _outcome(sim, web, finished), problem


def _outcome(sim: Simulator, web: list[np.ndarray], finished: list[JobDone]) -> PlacementOutcome:
    g = sim.workloads.group("web")
    rps, tenants = None, {}
    if g is not None and web:
        per_row = np.mean(web, axis=0)
        rps = float(per_row.sum())
        for s in np.unique(g.spec_index):
            tenants[sim.scenario.workloads[int(s)].vm] = float(per_row[g.spec_index == s].sum())
    times = [e.seconds for e in finished]
    job = float(np.mean(times)) if times else None
    return PlacementOutcome(rps, tenants, job, len(times))
