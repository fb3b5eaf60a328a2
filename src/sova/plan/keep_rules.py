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
from sova.model.placement_rules import BoundRules
from sova.model.schema import Field
from sova.model.snapshot import Snapshot
from sova.plan.base import Policy, register

LOAD_WINDOW = 10.0


@register
class KeepRules(Policy):
    name = "keep-rules"
    loop = "global"
    summary = "move the VMs that break a must placement rule (a drained host's too) to hosts that keep the rules"
    params = {
        "period": Field("duration", 30.0, "how often the policy runs", lo=0, lo_open=True),
        "cpu_limit": Field("float", 0.9, "the most CPU a destination may carry with the VMs added", lo=0, hi=1),
    }
    analyzers = {"rules": {}}
    patient = True  # a drain's migrations queue behind the migration caps, one group after another

    def __init__(self, **params):
        super().__init__(**params)
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
        room = _Room.of(snap, knowledge)
        placement = snap.vm_host.copy()
        actions: list[Action] = []
        for v, rule in _to_move(bound, placement, {vm for vm, _ in broken}):
            if placement[v] != snap.vm_host[v] or snap.vm_migrating[v]:
                continue  # moved with its group already, or on its way
            group = _group(bound, v, placement)
            dst = self._destination(bound, snap, group, placement, room)
            if dst is None:
                self._stuck(snap, bound, group, rule)
                continue
            for member in group:
                actions += self._moves(snap, int(member), dst, rule)
                room.take(int(member), int(placement[member]), dst)
                placement[member] = dst
        return actions

    def _destination(
        self, bound: BoundRules, snap: Snapshot, group: np.ndarray, placement: np.ndarray, room: _Room
    ) -> int | None:
        src = int(placement[group[0]])
        without = placement.copy()
        without[group] = -1
        fits = room.fits(group, self.settings["cpu_limit"]) & snap.hosts_on()
        fits[src] = False
        must = fits.copy()
        every = fits.copy()
        for member in group:
            name = snap.vms[member]
            must &= bound.allowed(name, without)
            every &= bound.allowed(name, without, must_only=False)
        ok = every if (every & must).any() else must
        if not ok.any():
            return None
        candidates = np.flatnonzero(ok)
        return int(candidates[np.argmin(room.util[candidates])])

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
            taken: set[int] = set()
            stay = [v for v in culprits if int(placement[v]) not in taken and not taken.add(int(placement[v]))]
            culprits = [v for v in culprits if v not in stay]
        elif rule.kind == "affinity":
            hosts, counts = np.unique(placement[culprits], return_counts=True)
            culprits = [v for v in culprits if placement[v] != hosts[np.argmax(counts)]]
        out += [(v, rule.name) for v in culprits]
    return out


def _group(bound: BoundRules, v: int, placement: np.ndarray) -> np.ndarray:
    """`v` and the VMs that must-affinity rules bind to it (chained) on its host."""
    group, todo = {v}, [v]
    while todo:
        member = todo.pop()
        for r in bound.of_vm.get(member, []):
            rule = bound.rules[r]
            if rule.must and rule.kind == "affinity":
                mates = bound.members[r][placement[bound.members[r]] == placement[v]]
                todo += [int(m) for m in mates if int(m) not in group]
                group.update(int(m) for m in mates)
    return np.array(sorted(group), dtype=np.int64)


class _Room:
    """Memory free and CPU load per host, as the plan so far leaves them."""

    def __init__(self, snap: Snapshot, util: np.ndarray, cores: np.ndarray):
        self.snap = snap
        self.free = snap.host_memory - snap.committed_memory()
        self.util = util.copy()
        self.cores = cores

    @classmethod
    def of(cls, snap: Snapshot, knowledge: Knowledge) -> _Room:
        util = knowledge.host_cpu_util(LOAD_WINDOW)
        cores = knowledge.vm_cpu_cores(LOAD_WINDOW)
        if util is None or cores is None:  # no history yet: the VMs' vCPUs busy, the hosts as they are
            util, cores = np.zeros(len(snap.hosts)), snap.vm_vcpus.astype(float)
            util += np.bincount(snap.vm_host, weights=cores, minlength=len(snap.hosts)) / snap.host_cores
        return cls(snap, util, cores)

    def fits(self, group: np.ndarray, cpu_limit: float) -> np.ndarray:
        memory = self.snap.vm_memory[group].sum()
        return (self.free >= memory) & (self.util + self.cores[group].sum() / self.snap.host_cores <= cpu_limit)

    def take(self, v: int, src: int, dst: int) -> None:
        memory, cores = self.snap.vm_memory[v], self.cores[v]
        self.free[src] += memory
        self.free[dst] -= memory
        self.util[src] -= cores / self.snap.host_cores[src]
        self.util[dst] += cores / self.snap.host_cores[dst]
