"""What CloudScope's model predicts for a scenario: each VM's slowdown where it runs, measured over a
window of the simulator with no policy, and where a VM would be slowed down least ("what if it ran there?").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sova.analyze.loading_vectors import host_load, loading_vectors, vm_load, vm_terms, window_usage
from sova.analyze.vslowdown import gammas, slowdown_if_placed, v_slowdown
from sova.experiments.observed_run import observe_run
from sova.model.scenario import Scenario
from sova.model.schema import InputError, Problem


@dataclass(frozen=True)
class Prediction:
    vms: tuple[str, ...]
    hosts: tuple[str, ...]
    vm_host: np.ndarray
    slowdown: np.ndarray  # per VM, where it runs
    loading: np.ndarray  # VMs x 3
    gamma: np.ndarray  # hosts x 3
    what_if: np.ndarray | None  # per host: the chosen VM's slowdown were it there


def predict(scenario: Scenario, window: float, vm: str | None = None) -> Prediction:
    """Run the scenario `window` seconds with no policy, then predict from what its hosts reported."""
    if vm is not None and vm not in scenario.vm_index():
        raise InputError([Problem("--vm", f"no VM named {vm!r} in the scenario")])
    if window < scenario.step:
        raise InputError(
            [Problem("--window", f"{window:g} s is shorter than the scenario's step ({scenario.step:g} s)")]
        )
    _, knowledge = observe_run(scenario, window)
    usage = window_usage(knowledge, window)
    snap = usage.snapshot
    terms = vm_terms(usage)
    load = host_load(usage, terms)
    beta = loading_vectors(usage)
    gamma = gammas(load)
    what_if = None
    if vm is not None and vm in snap.vm_position:
        j = snap.vm_position[vm]
        guests = np.bincount(snap.vm_host, minlength=len(snap.hosts))
        what_if = slowdown_if_placed(load, vm_load(terms, j), guests, beta[j], int(snap.vm_host[j]))
    return Prediction(snap.vms, snap.hosts, snap.vm_host, v_slowdown(gamma, beta, snap.vm_host), beta, gamma, what_if)
