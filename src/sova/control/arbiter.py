"""Settling conflicts between the policies of one profile, by their priorities.

Two actions of different policies conflict when they act on the same VM (a migration and a VF attach, two
migrations elsewhere), or on one host in ways that exclude each other (a VM placed on a host that another
policy puts to sleep; two power changes or two Dom0 weights for one host). The runtime hands the arbiter
the actions the policies due in a tick want, and those already in the executor's hands; the arbiter keeps
the action of the higher priority (on a tie, of the policy earlier in the profile) and says why the other
lost. An action already running always stands (a migration under way cannot be taken back); one queued
but not started yields to a new action of a strictly higher priority.
"""

from __future__ import annotations

from dataclasses import dataclass

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


# (what an action does to a host) -> what it excludes there
_EXCLUDES = {"into": {"sleep"}, "sleep": {"into", "sleep", "wake"}, "wake": {"sleep", "wake"}, "dom0": {"dom0"}}


def _marks(action: Action) -> list[tuple[str, str]]:
    """The (kind, name) marks an action leaves: ('vm', VM) for its VM, and what it does to hosts (its kind
    says: ``Action.host_marks``)."""
    return [*((("vm", action.vm),) if getattr(action, "vm", None) else ()), *action.host_marks()]


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
