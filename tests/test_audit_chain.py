"""The audit trail's hash chain, on SQLite and on a real PostgreSQL server: appends chain each row to the
one before, two writers appending at once make one chain, a trail from before the chain is chained by
migration 0008, the database refuses UPDATE and DELETE on it, and `sova audit verify` names the first
row that was changed, removed or moved once that refusal is taken away (as a database owner can)."""

from __future__ import annotations

import itertools
import threading

import pytest
import sqlalchemy as sa

from helpers import database_at
from sova.cli import main as cli_main
from sova.control.audit import AuditEntry
from sova.service.audit_chain import GENESIS, row_hash
from sova.service.state import StateStore
from sova.service.tokens import TokenBook


def entry(n: int, message: str = "") -> AuditEntry:
    return AuditEntry(1000.0 + n / 7, n, "note", "test", "", f"vm{n}", f"entry {n}", message=message, details={"n": n})


def store_with_rows(url: str, count: int) -> StateStore:
    store = StateStore(url)
    store.append_audit([entry(n) for n in range(1, count + 1)])
    return store


def tamper(store: StateStore, *statements: str) -> None:
    """Run `statements` on the audit table with its append-only triggers out of the way, as an owner of
    the database could."""
    with store.engine.begin() as connection:
        postgres = connection.dialect.name == "postgresql"
        if postgres:
            connection.execute(sa.text("ALTER TABLE audit DISABLE TRIGGER audit_append_only"))
        else:
            connection.execute(sa.text("DROP TRIGGER audit_no_update"))
            connection.execute(sa.text("DROP TRIGGER audit_no_delete"))
        for statement in statements:
            connection.execute(sa.text(statement))


def verify(url: str, capsys) -> tuple[int, str, str]:
    code = cli_main(["audit", "verify", "--state", url])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_each_row_is_chained_to_the_one_before_and_a_whole_trail_verifies(database_url, capsys):
    store = store_with_rows(database_url, 3)
    TokenBook(store).create("carol", "operator", by="ann")  # another writer, as `sova token` is
    store.append_audit([entry(4), entry(5)])
    rows, _ = store.audit()
    with store.engine.connect() as connection:
        chain = connection.execute(sa.text("SELECT id, prev_hash, hash FROM audit ORDER BY id")).all()
    store.close()
    assert [r["id"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert chain[0].prev_hash == GENESIS
    assert all(row.prev_hash == before.hash for before, row in itertools.pairwise(chain))
    assert len({row.hash for row in chain}) == 6
    code, out, _ = verify(database_url, capsys)
    assert code == 0 and f"audit chain holds: 6 row(s), last hash {chain[-1].hash}" in out


def test_an_empty_trail_verifies(database_url, capsys):
    StateStore(database_url).close()
    code, out, _ = verify(database_url, capsys)
    assert code == 0 and "holds: 0 row(s)" in out


def test_the_database_refuses_to_change_or_remove_audit_rows(database_url):
    store = store_with_rows(database_url, 2)
    statements = ["UPDATE audit SET message = 'x' WHERE id = 1", "DELETE FROM audit WHERE id = 2"]
    if store.engine.dialect.name == "postgresql":
        statements.append("TRUNCATE audit")
    for statement in statements:
        with pytest.raises(sa.exc.DatabaseError, match="the audit trail is append-only"):  # noqa: SIM117
            with store.engine.begin() as connection:
                connection.execute(sa.text(statement))
    assert store.audit()[1] == 2 and store.verify_audit().broken is None
    store.close()


@pytest.mark.parametrize(
    ("statements", "row", "held", "problem"),
    [
        (["UPDATE audit SET message = 'nothing happened' WHERE id = 3"], 3, 2, "changed after it was written"),
        (["DELETE FROM audit WHERE id = 3"], 4, 2, "missing before it: the ids jump from 2 to 4"),
        (["DELETE FROM audit WHERE id = 1"], 2, 0, "missing before it: the trail starts at id 2"),
        (["DELETE FROM audit WHERE id = 5"], 5, 4, "missing at the end: the trail ends at id 4, its head says 5"),
        # rows 2 and 3 swap places
        ([f"UPDATE audit SET id = {new} WHERE id = {old}" for old, new in ((2, -2), (3, 2), (-2, 3))], 2, 1,
         "its prev_hash is not the hash of row 1"),
    ],
    ids=["message edited", "row deleted", "first row deleted", "last row deleted", "rows swapped"],
)  # fmt: skip
def test_verify_names_the_first_row_that_was_changed_removed_or_moved(
    database_url, capsys, statements, row, held, problem
):
    store = store_with_rows(database_url, 5)
    tamper(store, *statements)
    store.close()
    code, out, err = verify(database_url, capsys)
    assert code == 1
    assert f"audit chain broken at row {row}: " in err and problem in err
    assert f"{held} row(s) before it hold" in out


def test_a_row_rewritten_with_a_fresh_hash_breaks_the_link_to_the_row_after_it(database_url, capsys):
    store = store_with_rows(database_url, 4)
    with store.engine.connect() as connection:
        before = connection.execute(sa.text("SELECT prev_hash FROM audit WHERE id = 2")).scalar()
    forged = {**store.audit()[0][1], "message": "forged", "details": '{"n": 2}'}
    tamper(store, f"UPDATE audit SET message = 'forged', hash = '{row_hash(forged, before)}' WHERE id = 2")
    store.close()
    code, _, err = verify(database_url, capsys)
    assert code == 1 and "broken at row 3: its prev_hash is not the hash of row 2" in err


def test_a_trail_written_before_the_chain_is_chained_in_id_order_by_the_upgrade(database_url, capsys):
    insert = (
        "INSERT INTO audit (id, time, plan, event, policy, action, target, reason, status, message, details) "
        "VALUES (:id, :time, 0, 'note', 'p', '', 'h1', :reason, '', '', '{}')"
    )
    # id 4 never committed (a PostgreSQL sequence skips the ids of a rolled-back insert): no row is missing
    old = [(insert, {"id": i, "time": 10.0 + i, "reason": f"old {i}"}) for i in (1, 2, 3, 5)]
    database_at(database_url, "0006", old)
    store = StateStore(database_url)
    assert store.revision() == "0010"
    store.append_audit([entry(6)])
    rows, _ = store.audit()
    store.close()
    assert [(r["id"], r["reason"]) for r in rows] == [
        (1, "old 1"),
        (2, "old 2"),
        (3, "old 3"),
        (5, "old 5"),
        (6, "entry 6"),
    ]
    code, out, _ = verify(database_url, capsys)
    assert code == 0 and "holds: 5 row(s)" in out


def test_two_writers_appending_at_once_make_one_chain(database_url):
    """The manager's appends and `sova token`'s, each on its own connection: each writer, after its first
    append, waits for the other's first, so the two loops run at the same time from there on. Every row
    lands, and the chain holds. (Without the head's lock, both engines fail this on a duplicate id.)"""
    StateStore(database_url).close()
    manager, cli = StateStore(database_url), StateStore(database_url)
    first = {"manager": threading.Event(), "cli": threading.Event()}
    failures: list[BaseException] = []

    def writer(name: str, other: str, append) -> threading.Thread:
        def run() -> None:
            try:
                for n in range(60):
                    append(n)
                    if n == 0:
                        first[name].set()
                        assert first[other].wait(timeout=60), f"the {other} writer never appended"
            except BaseException as exc:
                failures.append(exc)

        return threading.Thread(target=run)

    book = TokenBook(cli)
    threads = [
        writer("manager", "cli", lambda n: manager.append_audit([entry(3 * n + k) for k in range(3)])),
        writer("cli", "manager", lambda n: book.create(f"t{n}", "viewer", by="ann")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not failures, failures
    total = manager.audit(limit=1)[1]
    check = manager.verify_audit()
    manager.close()
    cli.close()
    assert total == 180 + 60 and check.broken is None and check.rows == 240
