"""What-if: alternatives run over a horizon from one cluster snapshot (a scenario `sova snapshot export` wrote,
or any scenario), on the same demand and seed, each its own run of the simulator:

- ``nothing``: no policy acts (the loop's own duties, keep-rules and ha-restart, still do);
- ``as-is``: the profile that runs now, acting by itself;
- ``drain-H``: as-is, with host H put into maintenance at the start;
- ``profile-P``: profile P's policies instead;
- ``add-NAME``: as-is, with a VM of the size given arriving at the start, placed by the admission policy;
- ``plan``: actions (a pending plan) approved at the start, and no policy acting (as in approve mode, where
  any later plan waits for a person).

Each alternative is a profile of its own scenario, so its result is a profile's result (its summary, series,
migrations), and the report's tables and trade-off sentence compare them as they compare `sova run`'s.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

from sova.model.actions import Action
from sova.model.observed_demand import read_demand
from sova.model.scenario import ProfileSpec, Scenario, VmSpec, WorkloadSpec
from sova.model.scenario_events import ScenarioEvent

NOTHING = "nothing"
AS_IS = "as-is"


@dataclass(frozen=True)
class Alternative:
    """One course of action: whose policies run, and what an operator does at the start."""

    name: str
    profile: ProfileSpec  # the policies that run (its name is replaced by the alternative's)
    drain: tuple[str, ...] = ()
    vms: tuple[VmSpec, ...] = ()
    workloads: tuple[WorkloadSpec, ...] = ()
    plan: tuple[Action, ...] = ()


def alternatives(
    base: Scenario,
    current: ProfileSpec | None,
    drains: list[str] = (),
    profiles: list[ProfileSpec] = (),
    added: list[tuple[VmSpec, WorkloadSpec]] = (),
    plan: tuple[Action, ...] = (),
) -> list[Alternative]:
    """Doing nothing first (the baseline every other is compared with), then the current profile as it is,
    then each change asked for, made with the current profile's policies."""
    acting = current if current is not None else ProfileSpec(NOTHING)
    out = [Alternative(NOTHING, ProfileSpec(NOTHING))]
    if current is not None and current.policies:
        out.append(Alternative(AS_IS, current))
    out += [Alternative(f"drain-{host}", acting, drain=(host,)) for host in drains]
    out += [Alternative(f"profile-{profile.name}", profile) for profile in profiles]
    out += [Alternative(f"add-{vm.name}", acting, vms=(vm,), workloads=(workload,)) for vm, workload in added]
    if plan:
        out.append(Alternative("plan", ProfileSpec(NOTHING), plan=tuple(plan)))
    return out


def alternative_scenario(
    base: Scenario, alternative: Alternative, horizon: float, step: float | None = None
) -> Scenario:
    """The base scenario as the alternative runs it: its profile alone (acting: auto), over the horizon, at the
    simulator step given (None: the base's)."""
    profile = replace(alternative.profile, name=alternative.name, mode="auto")
    drains = tuple(ScenarioEvent(0.0, "drain", host) for host in alternative.drain)
    return replace(
        base,
        duration=horizon,
        step=step or base.step,
        profiles={alternative.name: profile},
        events=drains + tuple(event for event in base.events if event.at < horizon),
        vms=base.vms + alternative.vms,
        workloads=base.workloads + alternative.workloads,
    )


def run_alternatives(
    base: Scenario,
    chosen: list[Alternative],
    horizon: float,
    seed: int | None = None,
    workers: int = 1,
    done: Callable[[int], None] | None = None,
    step: float | None = None,
) -> list:
    """Each alternative's ProfileResult, in order; in `workers` processes (each run is deterministic); `step`:
    the simulator's (None: the base scenario's)."""
    from sova.experiments.parallel import run_all

    items = [(alternative_scenario(base, alt, horizon, step), alt.name, alt.plan) for alt in chosen]
    return run_all(functools.partial(_run_alternative, seed), items, workers, None, done)


def _run_alternative(seed: int | None, item: tuple[Scenario, str, tuple[Action, ...]]):
    from sova.experiments.scenario_runs import run_profile

    scenario, name, plan = item
    return run_profile(scenario, name, seed, plan=plan)


def sample_interval(base: Scenario) -> float | None:
    """The coarsest sample interval of the observed demand the scenario replays (None: it replays none): a
    what-if's natural step, as nothing in the demand changes faster."""
    files = {spec.params["file"] for spec in base.workloads if spec.kind == "observed"}
    return max((read_demand(file).interval for file in files), default=None)


def step_problem(base: Scenario, step: float) -> str | None:
    """Why the alternatives cannot run at `step` (None: they can): the storage subsystem's epochs must tile it,
    as the scenario reader asks of a scenario's own step."""
    epoch = base.simulator.get("storage_step") or 0.0
    if epoch and (epoch > step or abs(step / epoch - round(step / epoch)) > 1e-6 * step / epoch):
        return f"{step:g} s is not a whole number of the snapshot's storage epochs ({epoch:g} s)"
    return None
