"""Virtue's placement algorithms as global policies: measure, optimize, migrate, and again.

Every ``cycle`` seconds a policy measures the last ``window`` seconds (``placement.measure``), runs its
algorithm from the current placement and adopts the result if its own objective (the energy of the
information it has) drops by at least ``min_gain``. Between cycles, every ``period`` it starts the next
wave of migrations towards the adopted placement (``placement.moves``); the executor's rails apply to
each. Adding an algorithm means adding a subclass here.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

import numpy as np

from sova.analyze.findings import Findings
from sova.model.actions import FAILED, REJECTED, TIMEOUT, Action, Migrate, Outcome
from sova.model.knowledge import Knowledge
from sova.model.schema import MAX_SEED, Field
from sova.plan.base import Policy, register
from sova.plan.placement.annealing import anneal
from sova.plan.placement.greedy_fill import greedy_fill
from sova.plan.placement.greedy_net import greedy_net
from sova.plan.placement.measure import problem_from_knowledge, traffic_matrix
from sova.plan.placement.milp import solve
from sova.plan.placement.minimax import Evaluator
from sova.plan.placement.moves import next_wave
from sova.plan.placement.problem import PlacementError, PlacementProblem

PLACEMENT_PARAMS = {
    "period": Field("duration", 30.0, "how often the next wave of migrations may start", lo=0, lo_open=True),
    "cycle": Field("duration", 600.0, "how often to measure and optimize anew (Virtue's cycle)", lo=0, lo_open=True),
    "window": Field("duration", 60.0, "seconds of measurements a cycle averages", lo=1),
    "slots": Field("int", 4, "VMs a host may hold (the paper: 4)", lo=1),
    "min_gain": Field("float", 0.02, "drop in the objective a new placement needs to be adopted", lo=0),
    "seed": Field("int", 1, "random seed of the annealers", lo=0, hi=MAX_SEED),
}
SA_PARAMS = {
    **PLACEMENT_PARAMS,
    "steps": Field("int", 20_000, "annealing steps per cycle", lo=1),
    "t0": Field("float", 0.05, "starting temperature (in units of utilization)", lo=0, lo_open=True),
    "t_end": Field("float", 1e-4, "final temperature", lo=0, lo_open=True),
}
MODEL_PARAMS = {
    **PLACEMENT_PARAMS,
    "time_limit": Field("duration", 60.0, "HiGHS time limit per cycle", lo=0, lo_open=True),
    "gap": Field("float", 0.1, "relative gap at which HiGHS may stop (the paper: 10 %)", lo=0),
}


class PlacementPolicy(Policy):
    loop = "global"
    priority = 30  # optimizing a placement yields to relief
    energy: ClassVar[str] = "all"
    schema = PLACEMENT_PARAMS

    def __init__(self, **settings):
        super().__init__(**settings)
        self.rng = np.random.default_rng(self.settings["seed"])
        self.target: np.ndarray | None = None
        self.problem: PlacementProblem | None = None
        self.why = ""
        self.next_cycle = self.settings["window"]  # the first cycle once a whole window has been measured

    @abstractmethod
    def optimize(self, problem: PlacementProblem, x0: np.ndarray) -> np.ndarray:
        """The placement the algorithm proposes for `problem`, starting from `x0` (VM -> host index)."""

    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        snap = knowledge.latest
        if self.target is not None and (refused := _refused(self.outcomes)) is not None:
            action, outcome = refused  # a wave's move failed or was refused for good: measure again
            self.notes.append((action.vm, f"{action.describe()} {outcome.status}: {outcome.message}; measuring again"))
            self.target = None
            self.next_cycle = max(self.next_cycle, snap.time + self.settings["window"])
        if self.target is not None:
            if self.problem is None or self.problem.vm_names != snap.vms:
                self.target = None  # the inventory changed: measure again
            elif snap.vm_migrating.any():
                return []  # waves go one after the other: the next starts from where this one ends
            else:
                wave = next_wave(self.problem, snap.vm_host, self.target)
                if wave:
                    return [
                        Migrate(vm=snap.vms[v], dst=snap.hosts[h], policy=self.name, reason=self.why) for v, h in wave
                    ]
                # reached (or stuck): measure the settled placement for a whole window before the next cycle
                self.target = None
                self.next_cycle = max(self.next_cycle, snap.time + self.settings["window"])
                return []
        if snap.time >= self.next_cycle:
            self.next_cycle = snap.time + self.settings["cycle"]
            self._cycle(knowledge)
            if self.target is not None:
                return self.plan(knowledge, findings)
        return []

    def _cycle(self, knowledge: Knowledge) -> None:
        try:
            problem = problem_from_knowledge(knowledge, self.settings["window"], self.settings["slots"])
            x0 = knowledge.latest.vm_host.copy()
            x1 = self.optimize(problem, x0)
        except PlacementError:
            self.target = None
            return
        broken = problem.rules.violations(x1, must_only=True) if problem.rules is not None else []
        if broken:  # a placement that breaks a must rule is never a target (a safety net: the algorithms keep them)
            self.notes.append((problem.host_names[0], f"{self.name}'s placement is not used: {broken[0].describe()}"))
            self.target = None
            return
        before = Evaluator(problem, self.energy, x0).value()
        after = Evaluator(problem, self.energy, x1).value()
        if before - after >= self.settings["min_gain"]:
            self.problem, self.target = problem, x1
            moves = int((x0 != x1).sum())
            self.why = f"{self.name}: maximum utilization {before:.0%} -> {after:.0%} with {moves} migration(s)"
        else:
            self.target = None

    def score_hosts(self, knowledge: Knowledge, vm: int, candidates: np.ndarray) -> np.ndarray | None:
        """Extension point: the share of `vm`'s traffic (both ways, over the window) with the VMs on each host,
        so the profile's other policies send a VM towards the VMs it talks to."""
        cache = self.__dict__.setdefault("_traffic", {})
        if cache.get("time") != knowledge.latest.time:
            w = knowledge.window(self.settings["window"])
            cache.clear()
            cache["time"] = knowledge.latest.time
            if w is not None and len(w[1].flow_bytes):
                both = traffic_matrix(*w)
                cache["both"] = (both + both.T).tocsr()
        both = cache.get("both")
        if both is None:
            return None
        row = both.getrow(vm)
        total = row.sum()
        if total <= 0:
            return None
        hosts = knowledge.latest.vm_host[row.indices]
        return np.bincount(hosts, weights=row.data, minlength=len(candidates)) / total


def _refused(outcomes: list[tuple[Action, Outcome]]) -> tuple[Action, Outcome] | None:
    """The first migration that failed, timed out, or was refused for more than "not now"."""
    for action, outcome in outcomes:
        if not isinstance(action, Migrate):
            continue
        if outcome.status in (FAILED, TIMEOUT) or (outcome.status == REJECTED and not outcome.details.get("not_now")):
            return action, outcome
    return None


@register
class GreedyFill(PlacementPolicy):
    name = "greedy-fill"
    summary = "Virtue's Greedy Fill: re-place every VM, least network use first, each where the maximum stays lowest"

    def optimize(self, problem, x0):
        return greedy_fill(problem)


@register
class GreedyNet(PlacementPolicy):
    name = "greedy-net"
    energy = "links"
    summary = "Virtue's Greedy Net: move talkers off the most utilized link while that lowers it (no CPU data)"

    def optimize(self, problem, x0):
        return greedy_net(problem, x0)


class _Annealer(PlacementPolicy):
    schema = SA_PARAMS
    ordered = (("t_end", "t0"),)

    def optimize(self, problem, x0):
        p = self.settings
        return anneal(problem, x0, self.energy, self.rng, p["steps"], p["t0"], p["t_end"])


@register
class AnnealCpu(_Annealer):
    name = "sa-c"
    energy = "cpu"
    summary = "Virtue's SA C: simulated annealing on host CPU alone (like today's CPU-only balancers)"


@register
class AnnealCpuNic(_Annealer):
    name = "sa-cn"
    energy = "nic"
    summary = "Virtue's SA CN: simulated annealing on CPU and host NIC counters"


@register
class AnnealCpuNicMatrix(_Annealer):
    name = "sa-cntm"
    energy = "nic-tm"
    summary = "Virtue's SA CNTM: SA CN with the traffic matrix (traffic inside a host leaves the NIC alone)"


@register
class AnnealAll(_Annealer):
    name = "sa-all"
    energy = "all"
    summary = "Virtue's SA All: simulated annealing on CPU and every link of the topology"


@register
class Model(PlacementPolicy):
    name = "model"
    schema = MODEL_PARAMS
    summary = "Virtue's Model: the exact minimax MIP (HiGHS), warm-started from Greedy Fill, with a time limit"

    last_gap: float | None = None  # the gap HiGHS reached in the last optimize

    def optimize(self, problem, x0):
        start = greedy_fill(problem)
        result = solve(problem, start=start, time_limit=self.settings["time_limit"], gap=self.settings["gap"])
        self.last_gap = result.gap
        return result.x
