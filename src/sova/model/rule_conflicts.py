"""Must rules that no placement can satisfy, each reported with the VMs and rules involved.

Checked over the names and capacities alone, before anything runs:
- a VM whose on-hosts and off-hosts rules leave it no host;
- VMs bound together (affinity rules, chained) that an anti-affinity rule keeps apart;
- VMs bound together whose host rules share no host, or whose memory fits on none of those hosts;
- an anti-affinity rule whose VMs cannot each get a host of their own (a bipartite matching of its VMs,
  each affinity group as one, to the hosts allowed to them: exact for one rule).
Several anti-affinity rules together, and capacity beyond one group's memory, are found when a placement
is sought (the executor and the policies then report the rule that stops them).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from sova.model.placement_rules import HOST_KINDS, BoundRules, RuleBook


def rule_conflicts(
    book: RuleBook,
    vms: tuple[str, ...],
    hosts: tuple[str, ...],
    vm_memory: np.ndarray | None = None,
    host_memory: np.ndarray | None = None,
) -> list[str]:
    """Why the must rules cannot all hold for these VMs on these hosts (empty: no conflict found)."""
    bound = book.bind(vms, hosts)
    musts = [index for index, rule in enumerate(bound.rules) if rule.must]
    if not musts:
        return []
    host_ok = _HostMasks(bound, musts)
    problems = [
        f"{vms[vm_index]} has no host left by {_names(bound, _host_rules(bound, musts, int(vm_index)))}"
        for vm_index, allowed in zip(host_ok.vms, host_ok.rows, strict=True)
        if not allowed.any()
    ]
    group_of, chain = _affinity_groups(bound, musts, len(vms))
    for group in np.unique(group_of[list(chain)]) if chain else ():
        members = np.flatnonzero(group_of == group)
        common = host_ok[members].all(axis=0)
        label = f"{', '.join(vms[vm_index] for vm_index in members)} (kept together by {_names(bound, chain_rules(chain, members))})"
        if not common.any():
            problems.append(f"{label} share no host their host rules allow")
        elif vm_memory is not None and host_memory is not None:
            need = float(vm_memory[members].sum())
            if need > host_memory[common].max():
                problems.append(
                    f"{label} need {need:.0f} MiB on one host; the largest they may use has "
                    f"{host_memory[common].max():.0f} MiB"
                )
    for rule_index in musts:
        if bound.rules[rule_index].kind != "anti-affinity" or len(bound.members[rule_index]) < 2:
            continue
        problems += _apart_problems(bound, rule_index, group_of, host_ok, chain)
    return problems


class _HostMasks:
    """The hosts each VM's must host rules allow: a row of hosts for each VM a must rule names (`vms`),
    every host for the others (a VMs x hosts matrix for 100,000 VMs would take a GiB for nothing)."""

    def __init__(self, bound: BoundRules, musts: list[int]):
        self.vms = np.unique(np.concatenate([bound.members[rule_index] for rule_index in musts]))
        self.row = np.full(len(bound.vms), -1, dtype=np.int64)
        self.row[self.vms] = np.arange(len(self.vms))
        self.rows = np.ones((len(self.vms), len(bound.hosts)), dtype=bool)
        for rule_index in musts:
            kind = bound.rules[rule_index].kind
            if kind in HOST_KINDS:
                rows = self.row[bound.members[rule_index]]
                self.rows[rows] &= bound.group[rule_index] if kind == "on-hosts" else ~bound.group[rule_index]

    def __getitem__(self, vm_indices: np.ndarray) -> np.ndarray:
        """The rows of these VMs, each named by a must rule."""
        return self.rows[self.row[vm_indices]]


def _host_rules(bound: BoundRules, musts: list[int], v: int) -> list[int]:
    return [
        rule_index
        for rule_index in bound.of_vm.get(v, [])
        if rule_index in musts and bound.rules[rule_index].kind in HOST_KINDS
    ]


def _affinity_groups(bound: BoundRules, musts: list[int], vms: int) -> tuple[np.ndarray, dict[int, list[int]]]:
    """Each VM's affinity group (a union-find root) and, for the VMs in a group, the rules that bind them."""
    parent = np.arange(vms)

    def root(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = int(parent[v])
        return v

    chain: dict[int, list[int]] = {}
    for rule_index in musts:
        members = bound.members[rule_index]
        if bound.rules[rule_index].kind != "affinity" or len(members) < 2:
            continue
        for member in members:
            parent[root(int(member))] = root(int(members[0]))
            chain.setdefault(int(member), []).append(rule_index)
    group_of = np.arange(vms, dtype=np.int64)  # a VM no affinity rule names is a group of its own
    for member in chain:
        group_of[member] = root(member)
    return group_of, chain


def chain_rules(chain: dict[int, list[int]], members: np.ndarray) -> list[int]:
    return sorted({rule_index for member in members for rule_index in chain.get(int(member), [])})


def _apart_problems(
    bound: BoundRules, r: int, group_of: np.ndarray, host_ok: _HostMasks, chain: dict[int, list[int]]
) -> list[str]:
    members = bound.members[r]
    rule = bound.rules[r]
    groups, first = np.unique(group_of[members], return_index=True)
    problems = []
    for group in groups:
        together = members[group_of[members] == group]
        if len(together) > 1:
            bound_by = _names(bound, chain_rules(chain, together))
            problems.append(
                f"{', '.join(bound.vms[vm_index] for vm_index in together)} are kept apart by {rule.name} and together by {bound_by}"
            )
    if problems:
        return problems
    allowed = np.array([host_ok[np.flatnonzero(group_of == group_root)].all(axis=0) for group_root in groups])
    matched = maximum_bipartite_matching(csr_matrix(allowed.astype(np.int8)), perm_type="column")
    apart = int((matched >= 0).sum())
    if apart < len(groups):
        return [
            f"{rule.name} needs {len(groups)} hosts, one per VM ({', '.join(bound.vms[vm_index] for vm_index in members[first])}); "
            f"their host rules give at most {apart} of them a host of their own"
        ]
    return []


def _names(bound: BoundRules, rules: list[int]) -> str:
    return ", ".join(bound.rules[rule_index].name for rule_index in rules) or "no rule"
