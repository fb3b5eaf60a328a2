"""Settling conflicts between the policies of one profile, by their priorities.

Two actions of different policies conflict when they act on the same VM (a migration and a VF attach, two
migrations elsewhere), or on one host in ways that exclude each other (a VM placed on a host that another
policy puts to sleep; two power changes or two Dom0 weights for one host), or set the IO limits of a VM
that a fast IO controller holds (``IoControl``). The runtime hands the arbiter the actions the policies due
in a tick want, and those already in the executor's hands; the arbiter keeps the action of the higher
priority (on a tie, of the policy earlier in the profile) and says why the other lost. An action already
running always stands (a migration under way cannot be taken back); one queued but not started, as a
controller's hold on a VM, yields to a new action of a strictly higher priority.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sova.model.actions import Action


@dataclass(frozen=True)
class Claim:
    """An action, the policy that wants it, its priority and place in the profile, and whether it is in the
    executor's hands already (`running`: started; `queued`: waiting to start)."""

    action: Action
    rank: int
    order: int
    running: bool = False
    queued: bool = False

    @property
    def policy(self) -> str:
        return self.action.policy


@dataclass(frozen=True)
class IoControl(Action):
    """A fast IO controller's hold on a VM's IO limits (the throttles it sets every epoch), claimed as an
    action waiting in the executor's hands while another policy wants to set them; never executed."""

    vm: str

    holds_vm: ClassVar[bool] = False  # a migration or a VF change of the VM does not clash with it
    sets_io: ClassVar[bool] = True

    def describe(self) -> str:
        return f"IO control of {self.vm}"


# (what an action does to a host, or to a VM's IO) -> what it excludes there
_EXCLUDES = {
    "into": {"sleep"},
    "sleep": {"into", "sleep", "wake"},
    "wake": {"sleep", "wake"},
    "dom0": {"dom0"},
    "io": {"io"},
}


def _marks(action: Action) -> list[tuple[str, str]]:
    """The (kind, name) marks an action leaves: ('vm', VM) for the VM it holds, ('io', VM) for the VM whose
    IO limits it sets, and what it does to hosts (its kind says: ``Action.host_marks``)."""
    vm = getattr(action, "vm", None)
    return [
        *((("vm", vm),) if vm and action.holds_vm else ()),
        *((("io", vm),) if vm and action.sets_io else ()),
        *action.host_marks(),
    ]


def _clashes(kind: str) -> set[str]:
    return {"vm"} if kind == "vm" else _EXCLUDES.get(kind, set())


@dataclass(frozen=True)
class Verdict:
    """The new actions that lost (by identity, with why), and the queued ones preempted (with why)."""

    lost: dict[int, str]
    preempted: list[tuple[Claim, str]]


def arbitrate(new: list[Claim], in_flight: list[Claim]) -> Verdict:
    """Which claims stand: running ones first, then by priority (higher first), then queued before new
    ones of the same priority, then by the profile's order; a claim that clashes with one that stands, of
    another policy, loses."""
    standing: dict[tuple[str, str], dict[str, Claim]] = {}  # mark -> policy -> the first claim standing there
    lost: dict[int, str] = {}
    preempted: list[tuple[Claim, str]] = []
    ordered = sorted([*in_flight, *new], key=lambda c: (not c.running, -c.rank, not c.queued, c.order))
    for claim in ordered:
        winner = _winner(claim, standing)
        if winner is None:
            for mark in _marks(claim.action):
                standing.setdefault(mark, {}).setdefault(claim.policy, claim)
            continue
        why = _why(claim, winner)
        if claim.running or claim.queued:
            preempted.append((claim, why))
        else:
            lost[id(claim.action)] = why
    return Verdict(lost, preempted)


def _winner(claim: Claim, standing: dict[tuple[str, str], dict[str, Claim]]) -> Claim | None:
    if claim.running:
        return None
    for kind, name in _marks(claim.action):
        for other in _clashes(kind):
            for policy, holder in standing.get((other, name), {}).items():
                if policy != claim.policy:
                    return holder
    return None


def _why(loser: Claim, winner: Claim) -> str:
    what = f"{winner.action.describe()} of {winner.policy}"
    if winner.running:
        return f"conflicts with {what}, under way"
    if winner.rank > loser.rank:
        return f"conflicts with {what} (priority {winner.rank} > {loser.rank})"
    return f"conflicts with {what} (priority {winner.rank} for both; {winner.policy} comes first)"
