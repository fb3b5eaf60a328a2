"""A simple threshold policy: move one VM off each host whose CPU stays above a threshold.

A host is hot when k of its last n CPU observations (each the mean over ``window`` seconds) exceed
``hot`` (the ``cpu-hotspot`` findings). From each hot host it moves the VM with the largest CPU use that
brings the host under ``hot`` if possible (else the largest), to the least loaded host where the VM fits
in memory and keeps that host under ``target``. One migration per hot host per round. It exists so the whole
MAPE-K pipeline runs end to end; the papers' policies come as their own modules.
"""

from __future__ import annotations

import numpy as np

from sova.analyze.findings import Findings, Hotspot
from sova.model.actions import Action, Migrate
from sova.model.knowledge import Knowledge
from sova.model.schema import Field
from sova.plan.base import Policy, register
from sova.plan.host_filter import HostFilter, pinned_mask, restricted


@register
class ThresholdMigration(Policy):
    name = "threshold-migration"
    priority = 50  # relieving an overloaded host
    summary = "migrate a VM off hosts whose CPU stays above a threshold (k of n observations)"
    schema = {
        "period": Field("duration", 30.0, "how often the policy runs", lo=0, lo_open=True),
        "hot": Field("float", 0.85, "CPU utilisation above which a host is hot", lo=0, hi=1),
        "target": Field("float", 0.7, "a destination must stay under this after the move", lo=0, hi=1),
        "k": Field("int", 3, "observations above the threshold needed", lo=1),
        "n": Field("int", 5, "observations considered", lo=1),
        "window": Field("duration", 10.0, "seconds averaged into one observation", lo=0, lo_open=True),
    }
    analyzers = {"cpu-hotspot": {"interval": "window", "threshold": "hot"}}
    ordered = (("target", "hot"), ("k", "n"))

    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        p = self.settings
        hotspots = findings.of(Hotspot)
        hot = np.array([h.hot for h in hotspots], dtype=bool)
        if not hot.any():
            return []
        snap = knowledge.latest
        host_util = np.array([h.load for h in hotspots])  # CPU in the last observation
        vm_cores = knowledge.vm_cpu_cores(p["window"])
        mem_free = snap.host_memory - snap.committed_memory()
        rules = HostFilter.of(knowledge, policy=self)
        pinned = pinned_mask(rules, snap.vms)
        actions: list[Action] = []
        for h in np.flatnonzero(hot)[np.argsort(-host_util[hot])]:
            on_host = np.flatnonzero((snap.vm_host == h) & ~snap.vm_migrating & ~pinned)
            if not len(on_host):
                continue
            util_of = vm_cores[on_host] / snap.host_cores[h]
            enough = host_util[h] - util_of <= p["hot"]
            order = np.argsort(-util_of)
            if enough.any():  # the smallest VM that is enough, else the biggest
                order = np.concatenate([np.flatnonzero(enough)[np.argsort(util_of[enough])], order])
            move = self._choose(snap, on_host[order], vm_cores, host_util, mem_free, h, rules)
            if move is None:
                continue
            vm, dst = move
            if rules is not None:
                rules.placement[vm] = dst
            host_util[dst] += vm_cores[vm] / snap.host_cores[dst]
            host_util[h] -= vm_cores[vm] / snap.host_cores[h]
            mem_free[dst] -= snap.memory_held()[vm]
            actions.append(
                Migrate(
                    vm=snap.vms[vm],
                    dst=snap.hosts[dst],
                    policy=self.name,
                    reason=(
                        f"{snap.hosts[h]} CPU above {p['hot']:.0%} in {hotspots[h].above} of the "
                        f"last {p['n']} observations (now {hotspots[h].load:.0%}); {snap.vms[vm]} uses "
                        f"{vm_cores[vm]:.2f} cores; {snap.hosts[dst]} is the least loaded host that fits"
                    ),
                )
            )
        return actions

    def _choose(self, snap, candidates, vm_cores, host_util, mem_free, src, rules):
        for vm in candidates:
            after = host_util + vm_cores[vm] / snap.host_cores
            ok = (mem_free >= snap.memory_held()[vm]) & (after <= self.settings["target"])
            ok[src] = False
            ok = restricted(rules, vm, ok)
            if ok.any():
                dst = int(np.flatnonzero(ok)[np.argmin(host_util[ok])])
                return int(vm), dst
        return None
