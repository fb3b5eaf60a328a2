"""The placement rules as a policy sees them while it plans: which hosts a VM may go to, given the moves
planned so far. A policy narrows its candidate hosts with ``restrict`` (the must rules, and the should
rules where a candidate keeps them) and records each move it plans in ``placement``.
"""

from __future__ import annotations

import numpy as np

from sova.model.knowledge import Knowledge


class RuleFilter:
    def __init__(self, knowledge: Knowledge, placement: np.ndarray):
        snap = knowledge.latest
        self.bound = knowledge.rules.bind(snap.vms, snap.hosts)
        self.names = snap.vms
        self.placement = placement  # VM -> host as the plan so far leaves it (the caller's array, kept up to date)

    @classmethod
    def of(cls, knowledge: Knowledge, placement: np.ndarray | None = None) -> RuleFilter | None:
        """A filter over `placement` (default: a copy of where the VMs run); None when there are no rules."""
        if not knowledge.rules:
            return None
        return cls(knowledge, knowledge.latest.vm_host.copy() if placement is None else placement)

    def binds(self, vm: int) -> bool:
        return bool(self.bound.rules_of(self.names[vm]))

    def restrict(self, vm: int, candidates: np.ndarray) -> np.ndarray:
        """The candidate hosts (a mask) where `vm` keeps its must rules, narrowed to those that keep its
        should rules too when any does."""
        if not self.binds(vm):
            return candidates
        return self.bound.preferred(self.names[vm], self.placement, candidates)

    def allows(self, vm: int, host: int) -> bool:
        """Whether `vm` on `host` keeps its must rules."""
        return self.bound.breaking(self.names[vm], host, self.placement) is None


def restricted(rules: RuleFilter | None, vm: int, candidates: np.ndarray) -> np.ndarray:
    """`candidates` narrowed by the rules (unchanged without rules)."""
    return candidates if rules is None else rules.restrict(vm, candidates)
