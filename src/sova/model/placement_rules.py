"""Placement rules: which VMs run together, apart, on or off a group of hosts (as DRS and Btrplace offer).

Four kinds, each ``must`` (hard: no executed step may break it; the executor refuses one that would) or
``should`` (soft: policies prefer the hosts that keep it, and a broken one is counted, not refused):
- ``affinity``: the VMs run on one host;
- ``anti-affinity``: no two of the VMs share a host;
- ``on-hosts``: the VMs run on hosts of the group;
- ``off-hosts``: the VMs run on no host of the group (maintenance is such a rule over every VM).
VMs and hosts are named by name or glob and resolved against each snapshot, so VMs that arrive later are
bound by the rules that name them. A placement is an array of host indices per VM of the snapshot (-1:
not placed); a VM migrating counts at its destination (``heading``) as well as where it runs, so no step
of a migration breaks an anti-affinity rule.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from sova.model.name_match import NameMatcher

KINDS = ("affinity", "anti-affinity", "on-hosts", "off-hosts")
HOST_KINDS = ("on-hosts", "off-hosts")


@dataclass(frozen=True)
class PlacementRule:
    name: str
    kind: str  # one of KINDS
    vms: tuple[str, ...]  # names or globs
    hosts: tuple[str, ...] = ()  # the host group of on-hosts / off-hosts: names or globs
    must: bool = True

    def names(self, vm: str) -> bool:
        """Whether the rule binds the VM of this name (one of its names or globs matches it)."""
        return any(fnmatch.fnmatchcase(vm, pattern) for pattern in self.vms)

    def describe(self) -> str:
        group = f" hosts {', '.join(self.hosts)}" if self.kind in HOST_KINDS else ""
        return f"{self.name} ({'must' if self.must else 'should'} {self.kind}: VMs {', '.join(self.vms)}{group})"


def maintenance_rule(host: str) -> PlacementRule:
    """The rule a host in maintenance (drained) is under: no VM runs on it."""
    return PlacementRule(f"maintenance of {host}", "off-hosts", ("*",), (host,))


def failure_rule(host: str) -> PlacementRule:
    """The rule a host declared failed is under, until it reports again: no VM runs on it."""
    return PlacementRule(f"failure of {host}", "off-hosts", ("*",), (host,))


def fenced_rule(host: str) -> PlacementRule:
    """The rule a failed host is under once fenced (it runs no VM: powered off, or its domains destroyed),
    until it reports again: no VM runs on it, and its VMs may start elsewhere."""
    return PlacementRule(f"fencing of {host}", "off-hosts", ("*",), (host,))


def hosts_in_maintenance(book: RuleBook) -> list[str]:
    """The hosts under a maintenance rule, in the order they entered it."""
    return _hosts_under(book, maintenance_rule)


def hosts_failed(book: RuleBook) -> list[str]:
    """The hosts declared failed, in the order they failed."""
    return _hosts_under(book, failure_rule)


def hosts_fenced(book: RuleBook) -> list[str]:
    """The failed hosts fenced, in the order they were."""
    return _hosts_under(book, fenced_rule)


def _hosts_under(book: RuleBook, rule_of) -> list[str]:
    return [rule.hosts[0] for rule in book.rules if len(rule.hosts) == 1 and rule == rule_of(rule.hosts[0])]


@dataclass(frozen=True)
class Violation:
    """A rule the placement breaks, the VMs that break it and the hosts where."""

    rule: PlacementRule
    vms: tuple[str, ...]
    hosts: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.rule.describe()} is broken by {', '.join(self.vms)} on {', '.join(self.hosts)}"


class RuleBook:
    """The rules in force; ``bind`` resolves them against a snapshot's names (kept until the names change)."""

    def __init__(self, rules: Iterable[PlacementRule] = ()):
        self.rules: tuple[PlacementRule, ...] = tuple(rules)
        self._bound: BoundRules | None = None

    def __bool__(self) -> bool:
        return bool(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def with_rule(self, rule: PlacementRule) -> RuleBook:
        """These rules and `rule` (one of the same name is replaced)."""
        return RuleBook([*(other for other in self.rules if other.name != rule.name), rule])

    def without(self, name: str) -> RuleBook:
        return RuleBook(rule for rule in self.rules if rule.name != name)

    def bind(self, vms: tuple[str, ...], hosts: tuple[str, ...]) -> BoundRules:
        bound = self._bound
        if bound is None or (bound.vms is not vms and bound.vms != vms) or bound.hosts != hosts:
            bound = self._bound = BoundRules(self.rules, vms, hosts)
        return bound


class BoundRules:
    """The rules over one snapshot's VMs (indices) and hosts (masks)."""

    def __init__(self, rules: tuple[PlacementRule, ...], vms: tuple[str, ...], hosts: tuple[str, ...]):
        self.rules, self.vms, self.hosts = rules, vms, hosts
        vm_match, host_match = NameMatcher(vms), NameMatcher(hosts)
        position = {name: index for index, name in enumerate(vms)}
        host_position = {name: index for index, name in enumerate(hosts)}
        self.members: list[np.ndarray] = []
        self.group: list[np.ndarray] = []  # per rule: its hosts (all False for a VM-VM rule)
        self.of_vm: dict[int, list[int]] = {}
        for rule_index, rule in enumerate(rules):
            names = sorted({position[vm_name] for pattern in rule.vms for vm_name in vm_match(pattern)})
            self.members.append(np.array(names, dtype=np.int64))
            for vm_index in names:
                self.of_vm.setdefault(vm_index, []).append(rule_index)
            mask = np.zeros(len(hosts), dtype=bool)
            for pattern in rule.hosts:
                mask[[host_position[host_name] for host_name in host_match(pattern)]] = True
            self.group.append(mask)
        self.position = position
        self._by_name: dict[str, list[int]] = {}  # VMs not in the snapshot: the rules naming them

    def rules_of(self, vm: str) -> list[int]:
        """The rules that name `vm` (a VM of the snapshot, or one asked for and not placed yet)."""
        vm_index = self.position.get(vm)
        if vm_index is not None:
            return self.of_vm.get(vm_index, [])
        if vm not in self._by_name:
            self._by_name[vm] = [rule_index for rule_index, rule in enumerate(self.rules) if rule.names(vm)]
        return self._by_name[vm]

    def keeps(
        self,
        r: int,
        vm: str,
        vm_host: np.ndarray,
        heading: Mapping[int, int] | None = None,
        extra: Mapping[str, int] | None = None,
    ) -> np.ndarray:
        """Per host: `vm` there keeps rule r, the other VMs placed as `vm_host` says (and, for VMs migrating,
        also at their destination in `heading`; `extra`: VMs not in the snapshot, placed a moment ago)."""
        rule = self.rules[r]
        if rule.kind == "on-hosts":
            return self.group[r].copy()
        if rule.kind == "off-hosts":
            return ~self.group[r]
        vm_index = self.position.get(vm)
        others = self.members[r][self.members[r] != vm_index] if vm_index is not None else self.members[r]
        places = _places(others, vm_host, heading, both=rule.kind == "anti-affinity")
        if extra:
            new = [host_index for name, host_index in extra.items() if name != vm and rule.names(name)]
            places = np.concatenate([places, np.array(new, dtype=np.int64)])
        if rule.kind == "anti-affinity":
            mask = np.ones(len(self.hosts), dtype=bool)
            mask[places] = False
            return mask
        if not len(places):
            return np.ones(len(self.hosts), dtype=bool)
        mask = np.zeros(len(self.hosts), dtype=bool)
        mask[places] = True
        return mask

    def allowed(
        self,
        vm: str,
        vm_host: np.ndarray,
        must_only: bool = True,
        heading: Mapping[int, int] | None = None,
        extra: Mapping[str, int] | None = None,
    ) -> np.ndarray:
        """Per host: `vm` may run there under the rules (the must rules only, or all)."""
        mask = np.ones(len(self.hosts), dtype=bool)
        for rule_index in self.rules_of(vm):
            if self.rules[rule_index].must or not must_only:
                mask &= self.keeps(rule_index, vm, vm_host, heading, extra)
        return mask

    def preferred(
        self, vm: str, vm_host: np.ndarray, candidates: np.ndarray, extra: Mapping[str, int] | None = None
    ) -> np.ndarray:
        """The candidate hosts (a mask) that keep every rule, else those that keep the must rules."""
        ok = candidates & self.allowed(vm, vm_host, extra=extra)
        best = ok & self.allowed(vm, vm_host, must_only=False, extra=extra)
        return best if best.any() else ok

    def breaking(
        self, vm: str, host: int, vm_host: np.ndarray, heading: Mapping[int, int] | None = None
    ) -> PlacementRule | None:
        """The first must rule that `vm` on `host` would break, or None."""
        for rule_index in self.rules_of(vm):
            if self.rules[rule_index].must and not self.keeps(rule_index, vm, vm_host, heading)[host]:
                return self.rules[rule_index]
        return None

    def violations(self, vm_host: np.ndarray, must_only: bool = False) -> list[Violation]:
        """The rules the placement breaks (VMs not placed, -1, count nowhere)."""
        found = []
        for rule_index, rule in enumerate(self.rules):
            if must_only and not rule.must:
                continue
            members = self.members[rule_index]
            hosts = vm_host[members]
            placed = hosts >= 0
            if rule.kind in HOST_KINDS:
                inside = self.group[rule_index][np.where(placed, hosts, 0)]
                bad = placed & (~inside if rule.kind == "on-hosts" else inside)
            elif rule.kind == "anti-affinity":
                shared = np.bincount(hosts[placed], minlength=len(self.hosts)) > 1
                bad = placed & shared[np.where(placed, hosts, 0)]
            else:
                values, counts = np.unique(hosts[placed], return_counts=True)
                bad = placed & (hosts != values[np.argmax(counts)]) if len(values) > 1 else np.zeros(0, bool)
            if bad.any():
                culprits = members[bad] if rule.kind != "affinity" else members[placed]
                found.append(
                    Violation(
                        rule,
                        tuple(self.vms[vm_index] for vm_index in culprits),
                        tuple(dict.fromkeys(self.hosts[host_index] for host_index in vm_host[culprits])),
                    )
                )
        return found


def _places(others: np.ndarray, vm_host: np.ndarray, heading: Mapping[int, int] | None, both: bool) -> np.ndarray:
    """Hosts of `others`: where they run, or (migrating) where they go, or both."""
    where = vm_host[others]
    if heading:
        going = np.array([heading.get(int(vm_index), -1) for vm_index in others], dtype=np.int64)
        where = np.concatenate([where, going]) if both else np.where(going >= 0, going, where)
    return where[where >= 0]
