"""Where a VM may go, as a policy sees it while it plans: the placement rules, given the moves planned so
far, and the extension points of the profile's other policies (docs/policies.md). A policy narrows its
candidate hosts with ``restrict``, asks ``allows`` about one host, leaves the ``pinned`` VMs where they
are, and records each move it plans in ``placement``.
"""

from __future__ import annotations

import numpy as np

from sova.model.knowledge import Knowledge
from sova.plan.base import Policy


class HostFilter:
    def __init__(self, knowledge: Knowledge, placement: np.ndarray, policy: Policy | None = None):
        snap = knowledge.latest
        self.knowledge = knowledge
        self.bound = knowledge.rules.bind(snap.vms, snap.hosts) if knowledge.rules else None
        self.names = snap.vms
        self.placement = placement  # VM -> host as the plan so far leaves it (the caller's array, kept up to date)
        peers = policy.peers if policy is not None else []
        self.filters = [p for p in peers if p.defines("filter_hosts")]
        self.scorers = [p for p in (policy.scorers if policy else []) if p.defines("score_hosts")]
        self.pinned: dict[str, str] = {}  # VM -> why a peer wants it left where it runs
        for peer in peers:
            for vm, why in peer.pinned(knowledge).items():
                self.pinned.setdefault(vm, f"{peer.name}: {why}")

    @classmethod
    def of(cls, knowledge: Knowledge, placement: np.ndarray | None = None, policy: Policy | None = None):
        """A filter over `placement` (default: a copy of where the VMs run) for `policy`; None when there are
        no rules and no other policy of the profile has a say."""
        if not knowledge.rules and (policy is None or not (policy.peers or policy.scorers)):
            return None
        return cls(knowledge, knowledge.latest.vm_host.copy() if placement is None else placement, policy)

    def binds(self, vm: int) -> bool:
        """Whether anything but its size narrows where `vm` may go: its rules, or a peer's filter."""
        return bool(self.filters) or (self.bound is not None and bool(self.bound.rules_of(self.names[vm])))

    def restrict(self, vm: int, candidates: np.ndarray) -> np.ndarray:
        """The candidate hosts (a mask) where `vm` keeps its must rules and the peers' filters let it go,
        narrowed to those that keep its should rules too when any does, then to those the scorers like
        best when they like any."""
        for peer in self.filters:
            kept = peer.filter_hosts(self.knowledge, vm, candidates)
            if kept is not None:
                candidates = candidates & kept
        if self.bound is not None and self.bound.rules_of(self.names[vm]):
            candidates = self.bound.preferred(self.names[vm], self.placement, candidates)
        if self.scorers and candidates.any():
            total = np.zeros(len(candidates))
            for peer in self.scorers:
                score = peer.score_hosts(self.knowledge, vm, candidates)
                if score is not None:
                    total += score
            best = total[candidates].max()
            if best > 0:
                candidates = candidates & (total >= best)
        return candidates

    def allows(self, vm: int, host: int) -> bool:
        """Whether `vm` on `host` keeps its must rules and every peer's filter."""
        if self.bound is not None and self.bound.breaking(self.names[vm], host, self.placement) is not None:
            return False
        one = np.zeros(len(self.knowledge.latest.hosts), dtype=bool)
        one[host] = True
        return all((kept := p.filter_hosts(self.knowledge, vm, one)) is None or kept[host] for p in self.filters)


def pinned_mask(hosts: HostFilter | None, vms: tuple[str, ...]) -> np.ndarray:
    """Per VM: a peer wants it left where it runs (none without a filter)."""
    if hosts is None or not hosts.pinned:
        return np.zeros(len(vms), dtype=bool)
    return np.array([vm in hosts.pinned for vm in vms], dtype=bool)


def restricted(hosts: HostFilter | None, vm: int, candidates: np.ndarray) -> np.ndarray:
    """`candidates` narrowed by the filter (unchanged without one)."""
    return candidates if hosts is None else hosts.restrict(vm, candidates)
