"""The audit log: every decision and outcome, in order, so a report (or a person) can replay why.

A plan's entries start with the findings it rests on (event "finding": ``action`` is the finding's kind,
``target`` the host or VM it is about, ``reason`` its text and ``details`` its fields), then each action.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path

from sova.analyze.findings import Finding, vm_of
from sova.model.actions import Action, Outcome


@dataclass(frozen=True, slots=True)  # slots: a week of a busy policy is half a million entries
class AuditEntry:
    time: float
    plan: int
    # finding | note | proposed | rejected | applied | failed | finished | dry-run | pending | approved | expired
    # | superseded | waiting
    event: str
    policy: str
    action: str
    target: str
    reason: str
    status: str = ""
    message: str = ""
    details: dict = field(default_factory=dict)


_NO_DETAILS: dict = {}  # shared by the entries without details (never changed: entries are frozen)
_FIELDS = tuple(f.name for f in fields(AuditEntry))


class AuditLog:
    def __init__(self) -> None:
        self.entries: list[AuditEntry] = []

    def record(self, time: float, plan: int, event: str, action: Action, outcome: Outcome | None = None) -> None:
        self.entries.append(
            AuditEntry(
                time=time,
                plan=plan,
                event=event,
                policy=action.policy,
                action=action.describe(),
                target=action.target,
                reason=action.reason,
                status=outcome.status if outcome else "",
                message=outcome.message if outcome else "",
                details=dict(outcome.details) if outcome and outcome.details else _NO_DETAILS,
            )
        )

    def record_finding(self, time: float, plan: int, policy: str, finding: Finding) -> None:
        about = vm_of(finding) or finding.host
        text = finding.describe()
        self.entries.append(
            AuditEntry(time, plan, "finding", policy, finding.kind, about, text, details=finding.to_dict())
        )

    def record_note(self, time: float, policy: str, target: str, text: str) -> None:
        """What a policy could not do, and why (event "note")."""
        self.entries.append(AuditEntry(time, 0, "note", policy, "", target, text))

    def write_jsonl(self, path: Path) -> None:
        with path.open("w", encoding="utf-8") as f:
            for e in self.entries:  # the fields as they are (asdict's deep copy took most of a big run's writing)
                f.write(json.dumps({name: getattr(e, name) for name in _FIELDS}, default=float) + "\n")

    def count(self, event: str | None = None, status: str | None = None) -> int:
        return sum(
            1 for e in self.entries if (event is None or e.event == event) and (status is None or e.status == status)
        )
