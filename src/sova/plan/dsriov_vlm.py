"""The `dsriov-vlm` policy, the Sova paper's framework: dynamic SR-IOV and live migration, coordinated (§3).

Every ``period`` (the sensors' 10 s reporting interval):
1. The Autonomic Manager (Algorithm 2) finds hot hosts (the ``hotspot`` findings) and sends each a
   migration signal with a destination (``autonomic_manager``).
2. The Effector of a signalled host (Algorithm 1, lines 1-9) marks the VM with the largest MF for
   live migration (VLM): if it holds a VF the VF is revoked first (the plan detaches, then migrates; the
   executor waits for the unplug), and the destination's VF scheduler decides later whether it gets a VF
   there (``effector``).
3. Every Effector schedules its VFs among the remaining VMs (Algorithm 1, lines 10-28; ``dsriov``).
A VM that landed within ``min_residence`` seconds is not chosen to move again. With ``steady`` (the
default; issue 17) a VM moves only if its destination stays below ``ceiling`` with it by its forecast, the
source's load falls by ``min_gain``, and the destination sent no VM to the source within ``min_residence``:
Algorithm 2 alone lets saturated hosts trade VMs (docs/policies.md). Under placement rules,
a VM goes only where its must rules allow: when they let no VM of the hot host go to its signalled
destination, the next least loaded host below alpha that no other signal took is tried.
"""

from __future__ import annotations

import numpy as np

from sova.analyze.findings import Findings, Hotspot
from sova.analyze.intensity_class import classify, vf_eligible
from sova.analyze.load import host_capacity, vm_loads, vms_by_host
from sova.analyze.samples import window_samples
from sova.model.actions import Action, DetachVF, Migrate
from sova.model.knowledge import Knowledge
from sova.model.schema import Field
from sova.plan.autonomic_manager import HOTSPOT_ORDER, HOTSPOT_PARAMS, destinations
from sova.plan.base import Policy, register
from sova.plan.dsriov import VF_PARAMS, vf_plan
from sova.plan.effector import choose_vm
from sova.plan.host_filter import HostFilter

MIGRATION_PARAMS = {
    **HOTSPOT_PARAMS,
    "alpha": Field("float", 0.7, "load threshold of a hotspot; also the most a destination may carry", lo=0, hi=1),
    "host_cooldown": Field(
        "duration", 0.0, "a host that received (sent) a VM sends (receives) none for this long (0: off)", lo=0
    ),
    "steady": Field(
        "bool",
        True,
        "move a VM only if the destination, by its forecast, stays below the ceiling with it, the source's "
        "load falls by min_gain, and the destination sent no VM to the source within min_residence "
        "(false: Algorithm 2 as the paper gives it)",
    ),
    "min_gain": Field("float", 0.05, "with steady: the least fall of the source's load a move must give", lo=0, hi=1),
    "ceiling": Field(
        "float",
        0.9,
        "with steady: the most a destination may carry after a move, by its forecast (the executor's CPU headroom)",
        lo=0,
        hi=1,
    ),
}


@register
class DsriovVlm(Policy):
    name = "dsriov-vlm"
    priority = 50  # relieving a hotspot
    loop = "global"
    summary = "coordinate dynamic SR-IOV and hotspot migration (Sova Algorithms 1 and 2)"
    schema = {**VF_PARAMS, **MIGRATION_PARAMS}
    analyzers = {"hotspot": {"threshold": "alpha"}}
    ordered = HOTSPOT_ORDER

    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        p = self.settings
        snap = knowledge.latest
        actions = self._migrations(knowledge, findings.of(Hotspot))
        moving = {a.vm for a in actions if isinstance(a, Migrate)}
        s = window_samples(knowledge, p["window"])
        if s is not None:
            eligible = vf_eligible(snap, exclude=moving)
            actions += vf_plan(snap, classify(s, snap, p, eligible), eligible, p, self.name)
        return actions

    def _migrations(self, knowledge: Knowledge, hotspots: tuple[Hotspot, ...]) -> list[Action]:
        """Algorithm 2's signals and, for each, the Effector's choice of VM (Algorithm 1, lines 1-9)."""
        p = self.settings
        vm_load = vm_loads(knowledge, p["interval"])
        if not hotspots or vm_load is None:
            return []
        snap = knowledge.latest
        track, hosts, now = knowledge.placement, snap.hosts, snap.time
        pairs = destinations(
            np.array([h.hot for h in hotspots]),
            np.array([h.load for h in hotspots]),
            p["alpha"],
            not_source=track.hosts_within(track.host_received, hosts, now, p["host_cooldown"]),
            not_destination=track.hosts_within(track.host_sent, hosts, now, p["host_cooldown"]),
        )
        exclude = track.moved_within(now, p["min_residence"])
        committed = snap.committed_memory()
        members = vms_by_host(snap.vm_host, len(snap.hosts))
        rules = HostFilter.of(knowledge, policy=self)
        if rules is not None:
            exclude = exclude | set(rules.pinned)
        load = np.array([h.load for h in hotspots])
        now_load = np.array([(h.cpu, h.nic, h.mem) for h in hotspots])  # each resource in the last report
        capacity = host_capacity(snap)
        # under placement rules, the hosts to try when the rules let no VM of a hot host go to its destination
        spare = [int(j) for j in np.argsort(load, kind="stable") if load[j] < p["alpha"] and not hotspots[j].hot]
        taken = {dst for _, dst in pairs}
        actions: list[Action] = []
        for src, signalled in pairs:
            spot = hotspots[src]
            tries = [signalled] if rules is None else [signalled, *(j for j in spare if j not in taken and j != src)]
            pick = None
            for dst in tries:
                if p["steady"] and now - track.pair_moved.get((hosts[dst], hosts[src]), -np.inf) < p["min_residence"]:
                    continue  # dst sent a VM to src lately: sending one back would trade VMs
                barred = exclude
                if rules is not None:  # the VMs whose rules keep them off this destination
                    barred = exclude | {snap.vms[v] for v in members[src] if not rules.allows(int(v), dst)}
                accept = (
                    self._steady_test(vm_load, now_load, capacity, hotspots[dst], src, dst) if p["steady"] else None
                )
                pick = choose_vm(snap, vm_load, src, dst, now_load[src], barred, committed, members[src], accept)
                if pick is not None:
                    break
            if pick is None:
                continue
            taken.add(dst)
            v, mf = pick
            vm = snap.vms[v]
            if rules is not None:
                rules.placement[v] = dst
            why = (
                f"{spot.host} is a hotspot: {spot.resource} load {spot.load:.0%}, above alpha={p['alpha']:.0%} in "
                f"{spot.above} of the last {p['n']} reports, forecast {spot.forecast:.0%}; {vm} has the largest MF "
                f"({mf:.3g}); {snap.hosts[dst]} is the least loaded host{'' if dst == signalled else ' its rules allow'}"
            )
            if snap.vm_nic[v] == "vf":
                actions.append(DetachVF(vm=vm, policy=self.name, reason=f"revoke the VF of {vm} before migrating"))
            actions.append(Migrate(vm=vm, dst=snap.hosts[dst], policy=self.name, reason=why))
        return actions

    def _steady_test(self, vm_load, now_load, capacity, dst_spot: Hotspot, src: int, dst: int):
        """Whether moving a VM from src to dst keeps dst below `ceiling` after the move, at its forecast (its
        largest resource with the VM's load added, plus the rise its AR(1) forecast expects), and lowers
        src's load by min_gain: no move that saturates its destination or relieves too little to matter,
        so hosts do not trade VMs back and forth."""
        ceiling, min_gain = self.settings["ceiling"], self.settings["min_gain"]
        here, there = now_load[src], now_load[dst]
        rise = max(0.0, (dst_spot.forecast or dst_spot.load) - dst_spot.load)

        def accept(v: int) -> bool:
            after = (there + vm_load[v] * capacity[src] / capacity[dst]).max() + rise
            gain = here.max() - (here - vm_load[v]).max()
            return after < ceiling and gain >= min_gain

        return accept
