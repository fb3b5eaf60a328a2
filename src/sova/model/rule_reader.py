"""The `[[rules]]` of a scenario (or of `sova manage --rules FILE`): placement rules, checked with their place.

    [[rules]]
    name = "web-apart"              # optional; rule-N otherwise
    kind = "anti-affinity"          # affinity | anti-affinity | on-hosts | off-hosts
    vms = ["web*"]                  # names or globs
    strength = "must"               # must (the default) | should

    [[rules]]
    kind = "on-hosts"
    vms = ["db1", "db2"]
    hosts = ["h1", "h2"]            # the host group

Patterns that match no VM or host of a scenario are errors (a rules file for real hosts names VMs that may
start later, so there they are not); must rules no placement can satisfy are errors naming the VMs and rules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sova.model.name_match import NameMatcher
from sova.model.placement_rules import HOST_KINDS, KINDS, PlacementRule, RuleBook
from sova.model.rule_conflicts import rule_conflicts
from sova.model.scenario import HostSpec, VmSpec
from sova.model.schema import REQUIRED, Field, InputError, Reader, read_toml

RULE_FIELDS = {
    "name": Field("str", None, "the rule's name, as reports and the audit log give it (default: rule-N)"),
    "kind": Field("str", REQUIRED, "what the rule asks of its VMs", choices=KINDS),
    "vms": Field("list[str]", REQUIRED, "the VMs it binds: names or globs such as 'web*'"),
    "hosts": Field("list[str]", [], "on-hosts / off-hosts: the host group, names or globs"),
    "strength": Field("str", "must", "must: never broken; should: kept where a policy can", choices=("must", "should")),
}


def read_rules(
    reader: Reader,
    raw: Any,
    vm_names: list[str] | None,
    host_names: list[str] | None,
    vm_memory: np.ndarray | None = None,
    host_memory: np.ndarray | None = None,
    of: str = "of the scenario",
) -> RuleBook:
    """The rules of `raw` ([[rules]] entries); problems go to `r`. With the VMs' and hosts' names (a
    scenario's), every pattern must match and the must rules are checked for conflicts."""
    vm_match = NameMatcher(vm_names) if vm_names is not None else None
    host_match = NameMatcher(host_names) if host_names is not None else None
    rules: list[PlacementRule] = []
    for n, entry in enumerate(reader.entries(raw, "[[rules]]"), start=1):
        where = f"[[rules]] #{n}"
        before = len(reader.problems)
        t = reader.table(entry, RULE_FIELDS, where)
        if len(reader.problems) > before:
            continue
        name = t["name"] or f"rule-{n}"
        if any(rule.name == name for rule in rules):
            reader.error(f"{where}.name", f"rule name {name!r} is used twice")
        _check_names(reader, f"{where}.vms", t["vms"], vm_match, "VM", of)
        if t["kind"] in HOST_KINDS:
            if not t["hosts"]:
                reader.error(f"{where}.hosts", f"a {t['kind']} rule needs its host group, e.g. hosts = ['h1', 'h2']")
            _check_names(reader, f"{where}.hosts", t["hosts"], host_match, "host", of)
        elif t["hosts"]:
            reader.error(f"{where}.hosts", f"a {t['kind']} rule binds VMs to each other; it takes no hosts")
        elif vm_match is not None and len({v for p in t["vms"] for v in vm_match(p)}) < 2:
            reader.error(f"{where}.vms", f"an {t['kind']} rule needs at least two VMs; {t['vms']} names fewer")
        rules.append(PlacementRule(name, t["kind"], tuple(t["vms"]), tuple(t["hosts"]), t["strength"] == "must"))
    book = RuleBook(rules)
    if vm_names is not None and host_names is not None and not reader.problems:
        for problem in rule_conflicts(book, tuple(vm_names), tuple(host_names), vm_memory, host_memory):
            reader.error("[[rules]]", f"no placement can satisfy the must rules: {problem}")
    return book


def load_rules_file(path: Path, host_names: list[str] | None) -> RuleBook:
    """A rules file for real hosts (`sova manage --rules`): [[rules]] entries as in a scenario. VM patterns
    may name VMs that start later; host patterns must name `host_names` (when given). InputError with
    every problem and its place."""
    raw = read_toml(path, "a rules file (TOML with [[rules]] entries)")
    reader = Reader(str(path))
    reader.table(raw, {"rules": Field("any", REQUIRED)}, "")
    book = read_rules(reader, raw.get("rules", []), None, host_names, of="managed here")
    if reader.problems:
        raise InputError(reader.problems)
    return book


def read_scenario_rules(reader: Reader, raw: Any, vms: list[VmSpec], hosts: list[HostSpec]) -> RuleBook:
    """A scenario's [[rules]], checked against its VMs and hosts (and their memory) when those read well."""
    if reader.problems:  # names and sizes may be wrong: the rules' own keys are checked now, their names next time
        return read_rules(reader, raw, None, None)
    return read_rules(
        reader,
        raw,
        [v.name for v in vms],
        [h.name for h in hosts],
        np.array([v.memory for v in vms], dtype=float),
        np.array([h.memory - h.dom0_memory for h in hosts], dtype=float),
    )


def _check_names(
    reader: Reader, where: str, patterns: list[str], match: NameMatcher | None, what: str, of: str
) -> None:
    """Patterns there are; each matches a name (`of`: whose names, "of the scenario")."""
    if not patterns:
        reader.error(where, f"expected at least one {what} name or glob")
    if match is None:
        return
    for pattern in patterns:
        if not match(pattern):
            reader.error(where, f"{pattern!r} matches no {what} {of}")
