"""The manager's state store: its schema by Alembic, and what it keeps of the actions sent, on SQLite and
on a real PostgreSQL server that the tests start."""

from __future__ import annotations

import itertools
import os
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from helpers import database_at
from postgres_server import PostgresServer, binaries
from sova.service.state import StateStore

_databases = itertools.count()


@pytest.fixture(scope="module")
def postgres():
    if binaries() is None:
        pytest.skip("needs PostgreSQL (as root, `make` installs it)")
    # under /tmp itself: the server runs as the postgres user, who cannot enter pytest's root-only dirs
    server = PostgresServer(Path(tempfile.mkdtemp(prefix="sova-pg-"))).start()
    yield server
    server.stop()
    pid_file = server.data / "postmaster.pid"
    assert not pid_file.exists()  # the server is gone, by its own account
    server.remove()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    """A new, empty database on each engine."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'manager.db'}"
    server = request.getfixturevalue("postgres")
    name = f"manager_{os.getpid()}_{next(_databases)}"
    engine = sa.create_engine(server.url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(sa.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return server.url.rsplit("/", 1)[0] + f"/{name}"


def test_a_new_store_is_at_the_newest_revision_and_opening_it_again_changes_nothing(database_url):
    store = StateStore(database_url)
    assert store.revision() == "0007"
    store.record_sent("a1", "h1", "set-cpu", b'{"id": "a1"}')
    store.close()
    again = StateStore(database_url)  # the upgrade finds the schema there and keeps the rows
    assert again.revision() == "0007" and [s.action_id for s in again.unanswered()] == ["a1"]
    with again.engine.connect() as connection:
        tables = set(sa.inspect(connection).get_table_names())
    again.close()
    assert tables == {"actions", "plans", "audit", "tokens", "slos", "maintenance", "fenced", "alembic_version"}


def test_a_store_of_the_first_revision_is_upgraded_in_place_and_keeps_its_actions(database_url):
    action = "INSERT INTO actions (id, host, kind, action, sent_at) VALUES ('a1', 'h1', 'migrate', '{}', 1)"
    database_at(database_url, "0001", [(action, {})])
    store = StateStore(database_url)
    assert store.revision() == "0007"
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
