"""Plans as an operator expects them (OpenStack Watcher's life cycle): a recommendation equal to one that
waits is not added again, a newer one for the same VM supersedes it, and an ongoing plan ends succeeded,
partially succeeded, failed or cancelled by how its actions went; each keeps the wall clock's time beside
the executor's. The executor and the manager's plan book, on the real simulator and a SQLite state store."""

from __future__ import annotations

import time

from sova.control.executor import Executor
from sova.model.actions import Migrate
from sova.service.plan_book import PlanBook
from sova.service.state import StateStore
from test_executor import Rig


def booked(rig: Rig, tmp_path, mode: str) -> PlanBook:
    """The rig's executor again, auditing into a plan book over a store in tmp_path."""
    book = PlanBook(StateStore(f"sqlite:///{tmp_path / 'manager.db'}"))
    rig.ex = Executor(rig.driver, rig.ex.rails, mode, audit=book)
    return book


def states(book: PlanBook) -> dict[int, str]:
    book.flush()
    rows, _ = book.store.plans(limit=100)
    return {row.id: row.state for row in rows}


def test_a_recommendation_equal_to_a_waiting_plan_is_not_added_again():
    rig = Rig(mode="approve")
    first = rig.ex.submit([Migrate(vm="v1", dst="h2", reason="h1 at 91 %")], rig.k)
    again = rig.ex.submit([Migrate(vm="v1", dst="h2", reason="h1 at 93 %")], rig.k)
    assert again == first and list(rig.ex.pending) == [first]
    assert len(rig.events("pending")) == 1 and len(rig.events("proposed")) == 1


def test_a_newer_plan_for_the_same_vm_supersedes_the_waiting_one():
    rig = Rig(mode="approve")
    older = rig.ex.submit([Migrate(vm="v1", dst="h2")], rig.k)
    other = rig.ex.submit([Migrate(vm="v2", dst="h2")], rig.k)
    newer = rig.ex.submit([Migrate(vm="v1", dst="h3")], rig.k)
    assert sorted(rig.ex.pending) == [other, newer]
    (superseded,) = rig.events("superseded")
    assert superseded.plan == older and superseded.message == f"superseded by plan {newer}"


def test_an_ongoing_plan_ends_by_how_its_actions_went(tmp_path):
    rig = Rig(mode="auto")
    book = booked(rig, tmp_path, "auto")
    mixed = rig.ex.submit([Migrate(vm="v3", dst="h3"), Migrate(vm="v2", dst="h9")], rig.k)  # no h9: refused
    rig.run(60)
    good = rig.ex.submit([Migrate(vm="v1", dst="h2")], rig.k)
    bad = rig.ex.submit([Migrate(vm="v2", dst="h9")], rig.k)
    rig.run(60)
    assert states(book) == {good: "succeeded", bad: "failed", mixed: "partially-succeeded"}


def test_waiting_plans_end_rejected_cancelled_or_superseded_by_what_became_of_them(tmp_path):
    rig = Rig(mode="approve")
    book = booked(rig, tmp_path, "approve")
    rejected = rig.ex.submit([Migrate(vm="v1", dst="h2")], rig.k)
    cancelled = rig.ex.submit([Migrate(vm="v2", dst="h2")], rig.k)
    older = rig.ex.submit([Migrate(vm="v3", dst="h2")], rig.k)
    newer = rig.ex.submit([Migrate(vm="v3", dst="h3")], rig.k)
    rig.ex.reject(rejected)
    book.cancelled.add(cancelled)  # as the manager marks a plan a person cancels
    rig.ex.reject(cancelled, "cancelled by otto")
    assert states(book) == {rejected: "rejected", cancelled: "cancelled", older: "superseded", newer: "pending"}


def test_a_plan_its_decision_and_its_entries_keep_the_wall_clocks_time_beside_the_executors(tmp_path):
    rig = Rig(mode="approve")
    book = booked(rig, tmp_path, "approve")
    rig.run(30)  # the executor's clock (the simulator's) at 30 s, the wall clock's at today
    before = time.time()
    plan = rig.ex.submit([Migrate(vm="v1", dst="h2")], rig.k)
    book.decided_by[plan] = "otto"
    rig.ex.approve(plan, rig.k, by="otto")
    book.flush()
    after = time.time()
    row = book.store.plan(plan)
    entries, _ = book.store.audit(plan=plan)
    assert row.created == row.decided_at == rig.sim.t and before <= row.created_wall <= row.decided_wall <= after
    assert [e["event"] for e in entries] == ["proposed", "pending", "approved", "applied"]
    assert all(e["time"] == rig.sim.t and before <= e["wall_time"] <= after for e in entries)
