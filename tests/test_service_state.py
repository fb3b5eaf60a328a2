"""The manager's state store: its schema by Alembic, and what it keeps of the actions sent, on SQLite and
on a real PostgreSQL server that the tests start."""

from __future__ import annotations

import sqlalchemy as sa

from helpers import database_at
from sova.control.audit import AuditEntry
from sova.service import views
from sova.service.state import StateStore


def test_a_new_store_is_at_the_newest_revision_and_opening_it_again_changes_nothing(database_url):
    store = StateStore(database_url)
    assert store.revision() == "0010"
    store.record_sent("a1", "h1", "set-cpu", b'{"id": "a1"}')
    store.close()
    again = StateStore(database_url)  # the upgrade finds the schema there and keeps the rows
    assert again.revision() == "0010" and [s.action_id for s in again.unanswered()] == ["a1"]
    with again.engine.connect() as connection:
        tables = set(sa.inspect(connection).get_table_names())
    again.close()
    assert tables == {
        "actions",
        "plans",
        "audit",
        "audit_head",
        "tokens",
        "slos",
        "maintenance",
        "fenced",
        "forecasts",
        "alembic_version",
    }


def test_a_store_of_the_first_revision_is_upgraded_in_place_and_keeps_its_actions(database_url):
    action = "INSERT INTO actions (id, host, kind, action, sent_at) VALUES ('a1', 'h1', 'migrate', '{}', 1)"
    database_at(database_url, "0001", [(action, {})])
    store = StateStore(database_url)
    assert store.revision() == "0010"
    assert [(s.action_id, s.host, s.plan) for s in store.unanswered()] == [("a1", "h1", None)]
    store.close()


def test_an_action_awaits_its_outcome_until_one_is_recorded(database_url):
    store = StateStore(database_url)
    store.record_sent("a1", "h1", "migrate", b'{"id": "a1", "kind": "migrate"}')
    store.record_sent("a2", "h2", "set-cpu", b'{"id": "a2", "kind": "set-cpu"}')
    store.record_sent("a1", "h1", "migrate", b"sent again")  # the first record stands
    assert [(s.action_id, s.host, s.action) for s in store.unanswered()] == [
        ("a1", "h1", b'{"id": "a1", "kind": "migrate"}'),
        ("a2", "h2", b'{"id": "a2", "kind": "set-cpu"}'),
    ]
    assert store.record_outcome("a1", "ok", b'{"id": "a1", "status": "ok"}')
    assert not store.record_outcome("zz", "ok", b"{}")  # never sent by this manager: kept nowhere
    assert [s.action_id for s in store.unanswered()] == ["a2"]
    assert store.outcome("a1") == ("ok", b'{"id": "a1", "status": "ok"}') and store.outcome("a2") is None
    store.close()


def test_plans_of_a_store_before_the_life_cycle_are_named_by_what_their_actions_did(database_url):
    plan = "INSERT INTO plans (id, created, nonce, policy, state, actions, findings) VALUES (:id, 1, 'n', 'p', :state, '[]', '[]')"
    action = "INSERT INTO actions (id, host, kind, action, sent_at, status, plan) VALUES (:id, 'h1', 'migrate', '{}', 1, :status, :plan)"
    plans = ((1, "done"), (2, "done"), (3, "done"), (4, "executing"), (5, "rejected"))
    actions = (("a", "ok", 1), ("b", "ok", 2), ("c", "failed", 2), ("d", "rejected", 3))
    database_at(
        database_url,
        "0005",
        [(plan, {"id": i, "state": state}) for i, state in plans]
        + [(action, {"id": i, "status": status, "plan": plan_id}) for i, status, plan_id in actions],
    )
    store = StateStore(database_url)
    rows, _ = store.plans(limit=10)
    store.close()
    assert {row.id: row.state for row in rows} == {
        1: "succeeded",
        2: "partially-succeeded",
        3: "failed",
        4: "ongoing",
        5: "rejected",
    }


def test_plans_and_entries_of_a_store_before_wall_clock_times_are_shown_at_the_times_they_kept(database_url):
    plan = "INSERT INTO plans (id, created, nonce, policy, state, actions, findings, decided_at, decided_by) VALUES (1, 1.7e9, 'n', 'p', 'rejected', '[]', '[]', 1.7e9 + 30, 'otto')"
    entry = "INSERT INTO audit (time, plan, event, policy, action, target, reason, status, message, details) VALUES (1.7e9, 1, 'pending', 'p', 'migrate v1 to h2', 'v1', 'hot', '', '', '{}')"
    database_at(database_url, "0006", [(plan, {}), (entry, {})])
    store = StateStore(database_url)
    (row,), _ = store.plans()
    (audit_row,), _ = store.audit()
    store.close()
    assert row.created_wall is None and row.decided_wall is None and audit_row["wall_time"] is None
    shown = views.plan(row)
    assert (shown["created"], shown["sim_created"], shown["decided_at"]) == (1.7e9, None, 1.7e9 + 30)
    assert views.audit_entry(audit_row)["time"] == 1.7e9 and views.audit_entry(audit_row)["sim_time"] is None


def test_a_migrations_hold_down_after_a_restart_is_counted_on_the_clusters_clock_not_the_apis(database_url):
    store = StateStore(database_url)
    cluster_now = 0.5 * 1.8e9  # a simulated cluster at --speed 0.5 runs behind the wall clock
    finished = AuditEntry(cluster_now - 20, 1, "finished", "p", "migrate v1 to h2", "v1", "hot", status="ok")
    token = AuditEntry(1.8e9, 0, "token-created", "tokens", "token vera created", "vera", "by ada")
    store.append_audit([finished])
    store.append_audit([token])  # the API's events are on the wall clock
    recent = store.recent_migrations(60.0)
    store.close()
    assert recent == {"v1": cluster_now - 20}
