"""VLM alone, Sandpiper-style (Wood et al., NSDI'07): hotspot detection and volume-ordered migration.

A host is hot when one of its resources (CPU, NIC, memory) exceeds ``threshold`` in k of the last n
observations and its AR(1) forecast does too (the ``resource-hotspot`` findings). From a hot host, VMs
are tried in decreasing volume-to-size ratio (VSR = Sandpiper volume / memory); the destination is the
least loaded host (by Sandpiper volume) that has the memory and stays under the threshold on every
resource with the VM's load added. At most ``max_moves`` migrations per hot host per round. A VM with a
VF detaches it first.
"""

from __future__ import annotations

import numpy as np

from sova.analyze.findings import Findings, Hotspot
from sova.analyze.load import host_capacity, vm_loads
from sova.analyze.volume import sandpiper_volume, volume_to_size
from sova.model.actions import Action, DetachVF, Migrate
from sova.model.knowledge import Knowledge
from sova.model.schema import Field
from sova.plan.autonomic_manager import HOTSPOT_ORDER, HOTSPOT_PARAMS
from sova.plan.base import Policy, register
from sova.plan.host_filter import HostFilter, restricted


@register
class Sandpiper(Policy):
    name = "sandpiper"
    priority = 50  # relieving a hotspot
    loop = "global"
    summary = "live-migrate VMs off hotspots in decreasing volume-to-size ratio (Sandpiper)"
    schema = {
        "period": Field("duration", 10.0, "how often the policy runs", lo=0, lo_open=True),
        **HOTSPOT_PARAMS,
        "threshold": Field("float", 0.7, "utilisation of any resource that makes a host hot", lo=0, hi=1),
        "max_moves": Field("int", 1, "migrations per hot host per round", lo=1),
    }
    analyzers = {"resource-hotspot": {}}
    ordered = HOTSPOT_ORDER

    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        p = self.settings
        hotspots = findings.of(Hotspot)
        vm_load = vm_loads(knowledge, p["interval"])
        if not hotspots or vm_load is None:
            return []
        snap = knowledge.latest
        thr = p["threshold"]
        hot = np.array([h.hot for h in hotspots])
        now = np.array([(h.cpu, h.nic, h.mem) for h in hotspots])  # each resource in the last report
        mem_free = snap.host_memory - snap.committed_memory()
        exclude = knowledge.placement.moved_within(snap.time, p["min_residence"])
        vsr = volume_to_size(sandpiper_volume(*vm_load.T), snap.vm_memory)
        rules = HostFilter.of(knowledge, policy=self)
        if rules is not None:
            exclude = exclude | set(rules.pinned)
        capacity = host_capacity(snap)
        actions: list[Action] = []
        for h in sorted(np.flatnonzero(hot), key=lambda i: -now[i].max()):
            moves = 0
            for v in sorted(np.flatnonzero((snap.vm_host == h) & ~snap.vm_migrating), key=lambda i: -vsr[i]):
                if moves >= p["max_moves"] or snap.vms[v] in exclude:
                    continue
                load = vm_load[v] * capacity[h]
                after = now + load / capacity
                ok = (after < thr).all(axis=1) & (mem_free >= snap.memory_held()[v]) & ~hot
                ok[h] = False
                ok = restricted(rules, v, ok)
                if not ok.any():
                    continue
                cand = np.flatnonzero(ok)
                dst = int(cand[np.argmin(sandpiper_volume(*now[cand].T))])
                vm = snap.vms[v]
                if snap.vm_nic[v] == "vf":
                    actions.append(DetachVF(vm=vm, policy=self.name, reason=f"detach the VF of {vm} before migrating"))
                actions.append(
                    Migrate(
                        vm=vm,
                        dst=snap.hosts[dst],
                        policy=self.name,
                        reason=(
                            f"{snap.hosts[h]} is a hotspot (max load {now[h].max():.0%} > {thr:.0%} in {p['k']}+ of "
                            f"{p['n']} observations); {vm} has the largest VSR that fits ({vsr[v]:.3g}); "
                            f"{snap.hosts[dst]} is the least loaded host that stays under the threshold"
                        ),
                    )
                )
                now[dst] = after[dst]
                now[h] -= load / capacity[h]
                mem_free[dst] -= snap.memory_held()[v]
                if rules is not None:
                    rules.placement[v] = dst
                moves += 1
        return actions
