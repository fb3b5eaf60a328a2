"""A rough wall-clock estimate of a run before it starts, so that a run of hours says so up front.

The cost of one simulated step grows with the number of VMs. The constants come from measurements on the
project's 2-core machine: benchmarks/sim_speed.py (docs/benchmarks.md) steps 1,000 VMs at 1,365 steps/s and
10,000 VMs at 139 steps/s, about 0.72 us per VM and step; the quickstart (14 VMs, two profiles with the
executor, the recorder and a policy) costs about 0.5 ms per step whatever its size. The estimate is meant to
tell minutes from hours, not to be exact.

Placement optimizers add their own time, counted as an upper bound: Model (HiGHS) up to its `time_limit`
per optimization, the annealers about 0.13 ms per step (SA All: 20,000 steps in 2.6 s on the multi-tenant
set-up, docs/placement.md), once per trial and iteration ([trials]) or per `cycle` of a run.
"""

from __future__ import annotations

from sova.model.scenario import Scenario
from sova.model.schema import Reader

ANNEALING_STEP_SECONDS = 1.3e-4  # per annealing step (SA All, the slowest variant)
STEP_SECONDS = 5e-4  # per simulated step: runtime, recorder, policies of a small scenario
VM_STEP_SECONDS = 7.2e-7  # per VM and simulated step: the simulator's vector work


def simulated_steps(runs: list[Scenario], profiles: list[str]) -> int:
    """Simulated steps a `sova run` takes: every profile at every sweep value; trials run each placement."""
    total = 0
    for s in runs:
        if s.trials is not None:  # a Random placement, then each profile's placement per iteration
            total += s.trials.count * round(s.duration / s.tick) * (1 + len(profiles) * s.trials.iterations)
        else:  # a profile may tick finer than the scenario (its own storage_step)
            total += sum(round(s.duration / s.for_profile(name).tick) for name in profiles)
    return total


def wall_seconds(runs: list[Scenario], profiles: list[str], jobs: int = 1) -> float:
    """About how long the run takes on this machine (trials divide over `jobs` processes)."""
    vms = max(len(s.vms) for s in runs)
    per_step = STEP_SECONDS + VM_STEP_SECONDS * vms
    parallel = min(max(1, jobs), runs[0].trials.count) if runs[0].trials is not None else 1
    return (simulated_steps(runs, profiles) * per_step + optimizer_seconds(runs, profiles)) / parallel


def optimizer_seconds(runs: list[Scenario], profiles: list[str]) -> float:
    """An upper bound on the placement optimizers' time over the whole run."""
    from sova.plan.base import registry

    known = registry()
    total = 0.0
    for s in runs:
        for name in profiles:
            prof = s.profiles[name]
            for policy in prof.policies:
                fields = known[policy].schema if policy in known else {}
                params = Reader(s.source).table(prof.params.get(policy, {}), fields, "")  # units read, defaults
                once = params.get("time_limit") or params.get("steps", 0) * ANNEALING_STEP_SECONDS
                if s.trials is not None:
                    total += once * s.trials.count * s.trials.iterations
                elif "cycle" in params:
                    total += once * max(1.0, s.duration / params["cycle"])
    return total


def describe(seconds: float) -> str:
    """'40 s', '12 min', '3.2 h' or '2.5 days'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:,.1f} days"
