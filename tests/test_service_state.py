"""The manager's state store: its schema by Alembic, and what it keeps of the actions sent."""

from __future__ import annotations

import sqlalchemy as sa

from sova.service.state import StateStore


def test_a_new_store_is_at_the_newest_revision_and_opening_it_again_changes_nothing(tmp_path):
    url = f"sqlite:///{tmp_path / 'manager.db'}"
    store = StateStore(url)
    assert store.revision() == "0001"
    store.record_sent("a1", "h1", "set-cpu", b'{"id": "a1"}')
    store.close()
    again = StateStore(url)  # the upgrade finds the schema there and keeps the rows
    assert again.revision() == "0001" and [s.action_id for s in again.unanswered()] == ["a1"]
    with again.engine.connect() as connection:
        tables = set(sa.inspect(connection).get_table_names())
    assert tables == {"actions", "alembic_version"}


def test_an_action_awaits_its_outcome_until_one_is_recorded(tmp_path):
    store = StateStore(f"sqlite:///{tmp_path / 'manager.db'}")
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
