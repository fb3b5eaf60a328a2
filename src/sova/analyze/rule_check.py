"""The placement rules the cluster breaks now: a finding per VM that breaks one, with the rule.

A must rule is broken when a host is put into maintenance (its VMs break the maintenance rule until they
leave), when rules change, or when VMs were placed by hand; the ``keep-rules`` policy moves the VMs back
within the rules. A should rule a policy could not keep is reported the same way and left to the policies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sova.analyze.base import Analyzer, register
from sova.analyze.findings import Finding
from sova.model.knowledge import Knowledge


@dataclass(frozen=True)
class RuleBroken(Finding, kind="rule-broken"):
    """A VM that breaks a placement rule where it runs."""

    vm: str
    host: str
    rule: str
    must: bool
    text: str  # the rule, described

    def describe(self) -> str:
        return f"{self.vm} on {self.host} breaks {self.text}"


@register
class RuleCheck(Analyzer):
    name = "rules"
    summary = "the VMs that break a placement rule (must or should) where they run"

    def analyze(self, knowledge: Knowledge, settings: Mapping[str, Any]) -> tuple[RuleBroken, ...]:
        if not knowledge.rules or not len(knowledge):
            return ()
        snap = knowledge.latest
        bound = knowledge.rules.bind(snap.vms, snap.hosts)
        return tuple(
            RuleBroken(
                vm,
                snap.hosts[snap.vm_host[snap.vm_position[vm]]],
                broken.rule.name,
                broken.rule.must,
                broken.rule.describe(),
            )
            for broken in bound.violations(snap.vm_host)
            for vm in broken.vms
        )
