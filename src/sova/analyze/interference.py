"""The interference analyzer: each VM's predicted V-slowdown (CloudScope Eq. 7) on its host now, with
the per-resource slowdowns of its host and its loading vector, learned over the last ``window`` seconds.

Only the VMs predicted at least ``slowdown_above`` slower than alone (1.1: 10 %) get a finding: the
others say nothing a plan or a person needs, and one object per VM would cost more than the prediction
at 100,000 VMs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sova.analyze.base import Analyzer, register
from sova.analyze.findings import Finding
from sova.analyze.loading_vectors import VmUsage, host_load, loading_vectors, window_usage
from sova.analyze.vslowdown import gammas, v_slowdown
from sova.model.knowledge import Knowledge


@dataclass(frozen=True)
class Slowdown(Finding, kind="slowdown"):
    """A VM's predicted V-slowdown δ on its host, from its loading vector β and its host's γ."""

    vm: str
    host: str
    slowdown: float  # δ: 1 is as fast as alone
    threshold: float
    gamma_cpu: float
    gamma_disk: float
    gamma_net: float
    beta_cpu: float
    beta_disk: float
    beta_net: float

    @property
    def notable(self) -> bool:
        return self.slowdown >= self.threshold

    def describe(self) -> str:
        return (
            f"{self.vm} on {self.host}: predicted {self.slowdown:.2f}x slower than alone (time on cpu/disk/net "
            f"{self.beta_cpu:.0%}/{self.beta_disk:.0%}/{self.beta_net:.0%}; host slowdowns "
            f"{self.gamma_cpu:.2f}/{self.gamma_disk:.2f}/{self.gamma_net:.2f})"
        )


def predict(knowledge: Knowledge, window: float) -> tuple[VmUsage, np.ndarray, np.ndarray, np.ndarray] | None:
    """The window's rates (with its latest snapshot), each host's γ (CPU, disk, network), each VM's β and
    δ; None before the Knowledge holds a window."""
    usage = window_usage(knowledge, window)
    if usage is None:
        return None
    gamma = gammas(host_load(usage))
    beta = loading_vectors(usage)
    return usage, gamma, beta, v_slowdown(gamma, beta, usage.snapshot.vm_host)


@register
class Interference(Analyzer):
    name = "interference"
    summary = "CloudScope: each VM's predicted slowdown from co-located VMs (V-slowdown, Eq. 1-8)"
    reads = ("window", "slowdown_above")

    def analyze(self, knowledge: Knowledge, settings: Mapping[str, Any]) -> tuple[Slowdown, ...]:
        prediction = predict(knowledge, settings["window"])
        if prediction is None:
            return ()
        usage, gamma, beta, delta = prediction
        snap = usage.snapshot
        threshold = settings["slowdown_above"]
        slow = np.flatnonzero(delta >= threshold)
        hosts = snap.vm_host[slow]
        return tuple(
            Slowdown(snap.vms[j], snap.hosts[h], d, threshold, *g, *b)
            for j, h, d, g, b in zip(
                slow.tolist(),
                hosts.tolist(),
                delta[slow].tolist(),
                gamma[hosts].tolist(),
                beta[slow].tolist(),
                strict=True,
            )
        )


def predicted_interference(knowledge: Knowledge, window: float) -> dict[str, Any]:
    """Every VM's predicted δ with its β and its host's γ over the last `window` seconds, for a run's
    summary (``[outputs] interference``); the mean and the largest δ over the VMs."""
    prediction = predict(knowledge, window)
    if prediction is None:
        return {"window": window, "slowdown_mean": None, "slowdown_max": None, "vms": {}}
    usage, gamma, beta, delta = prediction
    snap = usage.snapshot
    vms = {
        vm: {"slowdown": d, "beta": b, "gamma": gamma[h].tolist()}
        for vm, d, b, h in zip(snap.vms, delta.tolist(), beta.tolist(), snap.vm_host.tolist(), strict=True)
    }
    return {"window": window, "slowdown_mean": float(delta.mean()), "slowdown_max": float(delta.max()), "vms": vms}
