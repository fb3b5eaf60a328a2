"""`sova place`: what a placement algorithm would do with a scenario, without running the scenario.

The simulator runs only the measurement window (the first step of Virtue's cycle, with no policy), then
the algorithm places the VMs; nothing is migrated. Reports the objective before and after, the most
utilized resource of each kind, the moves, and the optimizer's runtime.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sova.experiments.observed_run import observe_run
from sova.model.scenario import Scenario
from sova.model.schema import InputError, Problem, Reader
from sova.plan.base import registry
from sova.plan.placement.measure import problem_from_knowledge
from sova.plan.placement.minimax import Evaluator
from sova.plan.placement.problem import PlacementProblem
from sova.plan.placement.random_placement import random_placement
from sova.plan.placement_policies import PlacementPolicy
from sova.sim.engine import Simulator


def algorithms() -> tuple[str, ...]:
    """Random and every registered placement policy (a new one shows up here by registering)."""
    return ("random", *(name for name, cls in registry().items() if issubclass(cls, PlacementPolicy)))


@dataclass
class Placement:
    algorithm: str
    before: float
    after: float
    peaks_before: dict[str, float]
    peaks_after: dict[str, float]
    moves: list[tuple[str, str, str]]  # (vm, from, to)
    seconds: float


def place(scenario: Scenario, algorithm: str, window: float = 60.0, params: dict | None = None) -> Placement:
    if algorithm not in algorithms():
        raise InputError(
            [Problem("--algorithm", f"unknown algorithm {algorithm!r}; expected one of {', '.join(algorithms())}")]
        )
    policy = _policy(algorithm, params or {})
    sim, problem = run_and_measure(scenario, window, 0.0, policy.settings["slots"] if policy else 4)
    x0 = sim.vms.host.copy()
    t0 = time.perf_counter()
    if policy is None:
        x1 = random_placement(problem, np.random.default_rng(scenario.seed))
    else:
        x1 = policy.optimize(problem, x0)
    seconds = time.perf_counter() - t0
    e0, e1 = Evaluator(problem, "all", x0), Evaluator(problem, "all", x1)
    names, hosts = problem.vm_names, problem.host_names
    moves = [(names[v], hosts[x0[v]], hosts[x1[v]]) for v in np.flatnonzero(x0 != x1)]
    return Placement(algorithm, e0.value(), e1.value(), _peaks(e0), _peaks(e1), moves, seconds)


def run_and_measure(
    scenario: Scenario, seconds: float, warmup: float, slots: int, on_step: Callable[[Simulator], None] | None = None
) -> tuple[Simulator, PlacementProblem]:
    """Run the scenario for `seconds` with no policy and measure [warmup, seconds] as the Knowledge would
    hold it (placement.measure); `on_step` sees the simulator after every step from the warm-up on."""
    sim, knowledge = observe_run(scenario, seconds, warmup, on_step)
    return sim, problem_from_knowledge(knowledge, seconds - warmup + scenario.tick, slots)


def _policy(algorithm: str, params: dict) -> PlacementPolicy | None:
    if algorithm == "random":
        return None
    cls = registry()[algorithm]
    reader = Reader("sova place")
    p = reader.table(params, cls.schema, "--param ")
    if reader.problems:
        raise InputError(reader.problems)
    return cls(**p)


def _peaks(ev: Evaluator) -> dict[str, float]:
    return {k: float(v.max(initial=0.0)) for k, v in ev.utilizations().items()}
