"""Keep the must placement rules: move the VMs that break one to hosts that keep them all.

This is how a host is drained: maintenance is a must rule that keeps every VM off the host, and this
policy evacuates it. Which VMs move:
- on-hosts / off-hosts: every VM on a host the rule forbids it;
- anti-affinity: on a host with several of the rule's VMs, all but the first;
- affinity: the VMs away from the host that has most of the group.
A VM moves with the VMs a must affinity rule binds it to that share its host (one plan, so the executor
lets the group through). Its destination is on, has memory for the group, stays under ``cpu_limit`` with
the group's CPU added, keeps the must rules (and the should rules where some host can) and is the least
loaded such host. A VM with a VF gives it back first and asks for one again on its destination. A VM no
host can take is reported in the audit log once (until it can move or the rule is kept).
"""

from __future__ import annotations

import numpy as np

from sova.analyze.findings import Findings
from sova.analyze.rule_check import RuleBroken
from sova.model.actions import Action, AttachVF, DetachVF, Migrate
from sova.model.knowledge import Knowledge
from sova.model.placement_rules import BoundRules, hosts_failed
from sova.model.schema import Field
from sova.model.snapshot import Snapshot
from sova.plan.base import Policy, register
from sova.plan.evacuation import Room, destination, group_of


@register
class KeepRules(Policy):
    name = "keep-rules"
    priority = 100  # the rules before anything else
    loop = "global"
    summary = "move the VMs that break a must placement rule (a drained host's too) to hosts that keep the rules"
    schema = {
        "period": Field("duration", 30.0, "how often the policy runs", lo=0, lo_open=True),
        "cpu_limit": Field("float", 0.9, "the most CPU a destination may carry with the VMs added", lo=0, hi=1),
    }
    analyzers = {"rules": {}}
    patient = True  # a drain's migrations queue behind the migration caps, one group after another

    def __init__(self, **settings):
        super().__init__(**settings)
        self._said: set[tuple[str, str]] = set()  # (VM, rule) reported as stuck

    def wants_to_run(self, knowledge: Knowledge) -> bool:
        return bool(knowledge.rules) or bool(self._said)

    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        broken = {(f.vm, f.rule) for f in findings.of(RuleBroken) if f.must}
        self._said &= broken
        if not broken:
            return []
        snap = knowledge.latest
        bound = knowledge.rules.bind(snap.vms, snap.hosts)
        room = Room.of(snap, knowledge)
        placement = snap.vm_host.copy()
        failed = [snap.host_position[h] for h in hosts_failed(knowledge.rules)]
        actions: list[Action] = []
        for v, rule in _to_move(bound, placement, {vm for vm, _ in broken}):
            if placement[v] != snap.vm_host[v] or snap.vm_migrating[v] or placement[v] in failed:
                continue  # moved with its group already, or on its way; a failed host's VMs are ha-restart's
            group = group_of(bound, v, placement)
            dst = destination(bound, snap, group, placement, room, self.settings["cpu_limit"])
            if dst is None:
                self._stuck(snap, bound, group, rule)
                continue
            for member in group:
                actions += self._moves(snap, int(member), dst, rule)
                room.take(int(member), int(placement[member]), dst)
                placement[member] = dst
        return actions

    def _moves(self, snap: Snapshot, v: int, dst: int, rule: str) -> list[Action]:
        vm, why = snap.vms[v], f"{snap.vms[v]} breaks rule {rule} on {snap.hosts[snap.vm_host[v]]}"
        moves: list[Action] = []
        if snap.vm_nic[v] == "vf":
            moves.append(DetachVF(vm=vm, policy=self.name, reason=f"give back the VF of {vm} before it moves"))
        moves.append(Migrate(vm=vm, dst=snap.hosts[dst], policy=self.name, reason=f"{why}; {snap.hosts[dst]} keeps it"))
        if snap.vm_nic[v] == "vf" and snap.vfs_total[dst] > 0:
            rate = float(snap.vm_vf_rate[v])
            moves.append(AttachVF(vm=vm, rate=rate, policy=self.name, reason=f"{vm} held a VF before it moved"))
        return moves

    def _stuck(self, snap: Snapshot, bound: BoundRules, group: np.ndarray, rule: str) -> None:
        names = [snap.vms[v] for v in group]
        if (names[0], rule) in self._said:
            return
        self._said.add((names[0], rule))
        self.notes.append(
            (
                names[0],
                f"{', '.join(names)} break rule {rule} and no host can take them: none that is on, has room for "
                f"them under the CPU limit of {self.settings['cpu_limit']:.0%} and keeps their must rules "
                f"({'; '.join(bound.rules[r].describe() for r in bound.rules_of(names[0]) if bound.rules[r].must)})",
            )
        )


def _to_move(bound: BoundRules, placement: np.ndarray, breaking: set[str]) -> list[tuple[int, str]]:
    """(VM, rule) for each VM that should leave its host to keep a must rule, in rule order."""
    out = []
    for violation in bound.violations(placement, must_only=True):
        rule = violation.rule
        culprits = [bound.position[vm] for vm in violation.vms if vm in breaking]
        if rule.kind == "anti-affinity":  # the first on each host stays
            first_on: dict[int, int] = {}
            for v in culprits:
                first_on.setdefault(int(placement[v]), v)
            culprits = [v for v in culprits if first_on[int(placement[v])] != v]
        elif rule.kind == "affinity":
            hosts, counts = np.unique(placement[culprits], return_counts=True)
            culprits = [v for v in culprits if placement[v] != hosts[np.argmax(counts)]]
        out += [(v, rule.name) for v in culprits]
    return out
