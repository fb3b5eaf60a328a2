"""The audit log: every decision and outcome, in order, so a report (or a person) can replay why."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sova.model.actions import Action, Outcome


@dataclass(frozen=True)
class AuditEntry:
    time: float
    plan: int
    event: str  # proposed | rejected | applied | failed | finished | dry-run | pending | approved | expired | waiting
    policy: str
    action: str
    target: str
    reason: str
    status: str = ""
    message: str = ""
    details: dict = field(default_factory=dict)


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
                details=dict(outcome.details) if outcome else {},
            )
        )

    def write_jsonl(self, path: Path) -> None:
        with path.open("w", encoding="utf-8") as f:
            for e in self.entries:
                f.write(json.dumps(asdict(e), default=float) + "\n")

    def count(self, event: str | None = None, status: str | None = None) -> int:
        return sum(
            1 for e in self.entries if (event is None or e.event == event) and (status is None or e.status == status)
        )
