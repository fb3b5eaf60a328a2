"""The manager's audit log, which also keeps its plans: each plan's actions get ids, and the plans, their
states and the audit trail go to the state store, so that a restarted manager (or its standby) takes up
each plan where it stood.

A plan's state follows OpenStack Watcher's life cycle: ``pending`` (waiting for approval), then
``rejected``, ``expired``, ``superseded`` (a newer plan for the same VMs or hosts came while it waited),
``cancelled``, or ``ongoing`` (approved, or proposed in auto mode); an ongoing plan ends ``succeeded``
when every action succeeded, ``failed`` when none did, ``partially-succeeded`` in between, or
``cancelled``; ``dry-run`` plans only say what they would do. An action's id is
``NONCE-PLAN-INDEX`` (the nonce is the plan's, random), so a re-sent action keeps its id and the agent
applies it at most once. The executor's events arrive through ``record``; ``flush`` writes what they
changed to the store (plans first, then the actions the executor refused, then the audit entries, which
then leave memory: the store holds the trail). Each plan, decision and entry keeps the wall-clock time it
was made at beside the executor's time (the cluster's clock), for people (state.py).
"""

from __future__ import annotations

import json
import secrets
import time as wall_clock
from dataclasses import dataclass, field

from sova.analyze.findings import Finding
from sova.control.audit import AuditEntry, AuditLog
from sova.control.executor import Executor, PendingPlan
from sova.model.actions import OK, REJECTED, RUNNING, Action, Outcome
from sova.service.state import StateStore
from sova.service.wire import decode_action, encode_action, encode_outcome

ENDED = ("succeeded", "partially-succeeded", "failed", "cancelled")  # how an ongoing plan ends
TERMINAL = (*ENDED, "rejected", "expired", "superseded", "dry-run")


@dataclass
class _Plan:
    id: int
    nonce: str
    created: float
    policy: str
    state: str = "proposed"
    actions: list[Action] = field(default_factory=list)
    findings: list[dict] = field(default_factory=list)
    ended: set[int] = field(default_factory=set)  # indices of the actions that ended
    succeeded: set[int] = field(default_factory=set)  # indices of the actions that ended well
    written: bool = False  # the store has its row
    created_wall: float | None = None  # when it was made, on the wall clock (`created`: the cluster's)


def action_id(nonce: str, plan: int, index: int) -> str:
    return f"{nonce}-{plan}-{index}"


class PlanBook(AuditLog):
    def __init__(self, store: StateStore):
        super().__init__()
        self.store = store
        self.plans: dict[int, _Plan] = {}  # plans not yet ended
        self._ids: dict[int, tuple[str, Action, int, int]] = {}  # id(action) -> (its id, it, plan, index)
        self._findings: dict[int, list[dict]] = {}  # findings of plans whose actions have not come yet
        # plan -> (state, when on the cluster's clock, when on the wall clock, by) to write
        self._states: dict[int, tuple[str, float | None, float | None, str | None]] = {}
        self._entry_walls: list[float] = []  # the wall-clock time of each entry in `entries`
        self._unsent: list[tuple[str, int, Action, Outcome]] = []
        self.decided_by: dict[int, str] = {}
        self.cancelled: set[int] = set()  # plans a person cancelled

    def known_ids(self) -> set[str]:
        """The ids of the actions of the plans this book holds."""
        return {known[0] for known in self._ids.values()}

    def action_id(self, action: Action) -> tuple[str, int] | None:
        """The id of an action of a plan in this book, and its plan."""
        known = self._ids.get(id(action))
        return None if known is None or known[1] is not action else (known[0], known[2])

    # ------------------------------------------------------------------ the executor's events
    def record_finding(self, time: float, plan: int, policy: str, finding: Finding) -> None:
        super().record_finding(time, plan, policy, finding)
        self._entry_walls.append(wall_clock.time())
        self._findings.setdefault(plan, []).append(finding.to_dict())

    def record_note(self, time: float, policy: str, target: str, text: str) -> None:
        super().record_note(time, policy, target, text)
        self.store.append_audit([self.entries.pop()])  # now, and only now: flush writes the rest

    def record_forecast(self, time: float, plan: int, text: str) -> None:
        """A plan's forecast in a line (event "note", action "forecast"), written to the store now."""
        entry = AuditEntry(time, plan, "note", "forecast", "forecast", f"plan {plan}", text)
        self.store.append_audit([entry], [wall_clock.time()])

    def record_cancel(self, time: float, plan: int, by: str, dropped: int) -> None:
        """A person cancelled an ongoing plan (event "note", naming who): its actions not yet sent were
        dropped, each recorded as rejected; those sent run to their end, and name nobody."""
        book = self.plans.get(plan)
        policy = book.policy if book is not None else ""
        text = f"{dropped} unsent action(s) dropped"
        self.entries.append(
            AuditEntry(time, plan, "note", policy, "cancel", f"plan {plan}", f"cancelled by {by}", message=text)
        )
        self._entry_walls.append(wall_clock.time())

    def record(self, time: float, plan: int, event: str, action: Action, outcome: Outcome | None = None) -> None:
        super().record(time, plan, event, action, outcome)
        self._entry_walls.append(wall_clock.time())
        if event == "proposed":
            self._propose(time, plan, action)
            return
        book = self.plans.get(plan)
        if book is None:
            return  # an IO controller's event (plan 0), or a plan this book does not hold
        if event in ("pending", "dry-run"):
            self._set_state(book, event)
        elif event in ("expired", "superseded") or (event == "rejected" and book.state == "pending"):
            if event == "rejected":
                event = "cancelled" if plan in self.cancelled else "rejected"
            self._set_state(book, event, decided_at=time)
        elif event == "approved":
            self._set_state(book, "ongoing", decided_at=time)
        elif event in ("rejected", "finished", "applied") and (event != "applied" or outcome.status != RUNNING):
            self._end(book, action, outcome, refused=event != "finished")

    def _propose(self, time: float, plan: int, action: Action) -> None:
        book = self.plans.get(plan)
        if book is None:
            findings = self._findings.pop(plan, [])
            book = _Plan(plan, secrets.token_hex(4), time, action.policy, findings=findings)
            book.created_wall = wall_clock.time()
            self.plans[plan] = book
            self._set_state(book, "ongoing")  # auto mode; approve and dry-run say otherwise next
        index = len(book.actions)
        book.actions.append(action)
        self._ids[id(action)] = (action_id(book.nonce, plan, index), action, plan, index)

    def _set_state(self, book: _Plan, state: str, decided_at: float | None = None) -> None:
        """A plan's new state, to be written; `decided_at` for an approval, rejection or expiry."""
        book.state = state
        before = self._states.get(book.id)
        if decided_at is None and before is not None:  # a decision not yet written stays
            decided_at, decided_wall, by = before[1], before[2], before[3]
        elif decided_at is not None:
            decided_wall, by = wall_clock.time(), self.decided_by.pop(book.id, None)
        else:
            decided_wall = by = None
        self._states[book.id] = (state, decided_at, decided_wall, by)

    def _end(self, book: _Plan, action: Action, outcome: Outcome | None, refused: bool) -> None:
        known = self._ids.pop(id(action), None)
        if known is None:
            return
        if refused and book.state == "ongoing":  # never sent: recorded so that no restart sends it
            self._unsent.append((known[0], book.id, action, outcome or Outcome(REJECTED, "refused")))
        book.ended.add(known[3])
        if outcome is not None and outcome.status == OK:
            book.succeeded.add(known[3])
        self._end_if_over(book)

    def _end_if_over(self, book: _Plan) -> None:
        """An ongoing plan whose every action ended ends by how they went (or as cancelled)."""
        if book.state != "ongoing" or len(book.ended) < len(book.actions):
            return
        if book.id in self.cancelled:
            self._set_state(book, "cancelled")
        elif len(book.succeeded) == len(book.actions):
            self._set_state(book, "succeeded")
        else:
            self._set_state(book, "partially-succeeded" if book.succeeded else "failed")

    # ------------------------------------------------------------------ to the store
    def flush(self) -> None:
        """Write new plans, changed states, refused actions and new audit entries to the store."""
        for book in self.plans.values():
            if not book.written:
                wire = [_wire(a) for a in book.actions]
                state = self._states.get(book.id, (book.state,))[0]
                self.store.record_plan(
                    book.id, book.created, book.nonce, book.policy, state, wire, book.findings, book.created_wall
                )
                book.written = True
        for plan, (state, decided_at, decided_wall, by) in self._states.items():
            self.store.set_plan_state(plan, state, decided_at, by, decided_wall)
        self._states.clear()
        for aid, plan, action, outcome in self._unsent:
            payload = encode_action(aid, action)
            self.store.record_unsent(aid, plan, action.kind, payload, outcome.status, encode_outcome(aid, outcome))
        self._unsent.clear()
        self.store.append_audit(self.entries, self._entry_walls)
        self.entries.clear()
        self._entry_walls.clear()
        for plan in [p for p, book in self.plans.items() if book.state in TERMINAL]:
            for index, action in enumerate(self.plans[plan].actions):
                if index not in self.plans[plan].ended:
                    self._ids.pop(id(action), None)
            del self.plans[plan]
            self.cancelled.discard(plan)

    # ------------------------------------------------------------------ after a restart
    def resume(self, executor: Executor) -> int:
        """Give the executor the plans the store holds as pending or ongoing; how many. Pending ones
        wait for approval again; of an ongoing plan, actions never sent are queued (the rails check
        them again) and those sent and unanswered run (the caller sends them again under their ids)."""
        executor.continue_from(self.store.last_plan_id())
        taken = 0
        for state in ("pending", "ongoing"):
            rows, _ = self.store.plans(state=state, limit=1_000_000)
            for row in sorted(rows, key=lambda r: r.id):
                book = _Plan(row.id, row.nonce, row.created, row.policy, row.state, written=True)
                actions = [decode_action(json.dumps({"id": "-", **a}).encode())[1] for a in row.actions]
                ids = [action_id(row.nonce, row.id, i) for i in range(len(actions))]
                book.actions = actions
                self.plans[row.id] = book
                taken += 1
                for index, (aid, action) in enumerate(zip(ids, actions, strict=True)):
                    self._ids[id(action)] = (aid, action, row.id, index)
                if state == "pending":
                    executor.restore_pending(PendingPlan(row.id, actions, row.created))
                    continue
                known = self.store.action_states(ids)
                for index, (aid, action) in enumerate(zip(ids, actions, strict=True)):
                    if aid not in known:
                        executor.resume(row.id, action, running=False)
                    elif known[aid] == "":
                        executor.resume(row.id, action, running=True)
                    else:
                        book.ended.add(index)
                        if known[aid] == OK:
                            book.succeeded.add(index)
                        self._ids.pop(id(action))
                self._end_if_over(book)
        return taken


def _wire(action: Action) -> dict:
    """An action as its plan's record holds it: its wire form without an id."""
    raw = json.loads(encode_action("-", action))
    del raw["id"]
    return raw
