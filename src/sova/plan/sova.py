"""The Sova policy: dynamic SR-IOV and live migration, coordinated (the Sova paper, §3).

Every ``period`` (the sensors' 10 s reporting interval):
1. The Autonomic Manager (Algorithm 2) finds hot hosts and sends each a migration signal with a
   destination (``autonomic_manager``).
2. The Effector of a signalled host (Algorithm 1, lines 1-9) marks the VM with the largest MF for
   live migration (VLM): if it holds a VF the VF is revoked first (the plan detaches, then migrates; the
   executor waits for the unplug), and the destination's VF scheduler decides later whether it gets a VF
   there (``effector``).
3. Every Effector schedules its VFs among the remaining VMs (Algorithm 1, lines 10-28; ``dsriov``).
A VM that landed within ``min_residence`` seconds is not chosen to move again.
"""

from __future__ import annotations

from sova.analyze.load import RESOURCES, PlacementTracker, host_loads, vm_loads, vms_by_host
from sova.analyze.samples import window_samples
from sova.model.actions import Action, DetachVF, Migrate
from sova.model.knowledge import Knowledge
from sova.model.schema import Field
from sova.plan.autonomic_manager import HOTSPOT_PARAMS, migration_signals
from sova.plan.base import Policy, register
from sova.plan.dsriov import VF_PARAMS, vf_plan
from sova.plan.effector import choose_vm

MIGRATION_PARAMS = {
    **HOTSPOT_PARAMS,
    "alpha": Field("float", 0.7, "load threshold of a hotspot; also the most a destination may carry", lo=0, hi=1),
    "host_cooldown": Field(
        "duration", 0.0, "a host that received (sent) a VM sends (receives) none for this long (0: off)", lo=0
    ),
}


@register
class Sova(Policy):
    name = "sova"
    loop = "global"
    summary = "coordinate dynamic SR-IOV and hotspot migration (Sova Algorithms 1 and 2)"
    params = {**VF_PARAMS, **MIGRATION_PARAMS}

    def __init__(self, **params):
        super().__init__(**params)
        self.placement = PlacementTracker()

    def plan(self, knowledge: Knowledge) -> list[Action]:
        p = self.settings
        self.placement.update(knowledge)
        snap = knowledge.latest
        actions: list[Action] = []
        moving: set[str] = set()
        loads = host_loads(knowledge, p["interval"], p["n"])
        vm_load = vm_loads(knowledge, p["interval"])
        if loads is not None and vm_load is not None:
            valid = self.placement.reports_since_change(knowledge, p["interval"], p["n"])
            track, hosts, now = self.placement, snap.hosts, snap.time
            signals, _ = migration_signals(
                loads,
                p["k"],
                p["alpha"],
                valid=valid,
                not_source=track.hosts_within(track.host_received, hosts, now, p["host_cooldown"]),
                not_destination=track.hosts_within(track.host_sent, hosts, now, p["host_cooldown"]),
            )
            exclude = self.placement.moved_within(snap.time, p["min_residence"])
            committed = snap.committed_memory()
            members = vms_by_host(snap.vm_host, len(snap.hosts))
            for sig in signals:
                resident = members[sig.host]
                pick = choose_vm(
                    snap, vm_load, sig.host, sig.destination, loads[-1, sig.host], exclude, committed, resident
                )
                if pick is None:
                    continue
                v, mf = pick
                vm = snap.vms[v]
                res = RESOURCES[int(loads[-1, sig.host].argmax())]
                why = (
                    f"{snap.hosts[sig.host]} is a hotspot: {res} load {sig.load:.0%}, above alpha={p['alpha']:.0%} in "
                    f"{sig.above} of the last {p['n']} reports, forecast {sig.forecast:.0%}; {vm} has the largest MF "
                    f"({mf:.3g}); {snap.hosts[sig.destination]} is the least loaded host"
                )
                if snap.vm_nic[v] == "vf":
                    actions.append(DetachVF(vm=vm, policy=self.name, reason=f"revoke the VF of {vm} before migrating"))
                actions.append(Migrate(vm=vm, dst=snap.hosts[sig.destination], policy=self.name, reason=why))
                moving.add(vm)
        s = window_samples(knowledge, p["window"])
        if s is not None:
            actions += vf_plan(snap, s, p, self.name, exclude=moving)
        return actions
