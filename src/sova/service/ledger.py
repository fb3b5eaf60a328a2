"""An agent's ledger of the actions it was sent, on disk (SQLite), so that it applies each id at most once
even across its own restarts, and can send each outcome again until the bus has stored it."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

STARTED, RUNNING, FINISHED = "started", "running", "finished"


@dataclass(frozen=True)
class Entry:
    action_id: str
    action: bytes
    state: str  # started (applying), running (a long action the driver polls), finished
    outcome: bytes | None
    published: bool  # the bus stored the outcome


class Ledger:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None)  # every statement commits on its own
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")  # a recorded start survives a power cut
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS actions (id TEXT PRIMARY KEY, action BLOB NOT NULL, state TEXT NOT NULL,"
            " outcome BLOB, published INTEGER NOT NULL DEFAULT 0, finished_at REAL)"
        )
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(actions)")}
        if "finished_at" not in columns:  # a ledger of an earlier version
            self.db.execute("ALTER TABLE actions ADD COLUMN finished_at REAL")

    def begin(self, action_id: str, action: bytes) -> Entry | None:
        """Record that the action is about to be applied; the earlier entry if it was sent before."""
        before = self.get(action_id)
        if before is None:
            self.db.execute("INSERT INTO actions (id, action, state) VALUES (?, ?, ?)", (action_id, action, STARTED))
        return before

    def running(self, action_id: str) -> None:
        self.db.execute("UPDATE actions SET state = ? WHERE id = ?", (RUNNING, action_id))

    def finish(self, action_id: str, outcome: bytes) -> None:
        self.db.execute(
            "UPDATE actions SET state = ?, outcome = ?, finished_at = ? WHERE id = ?",
            (FINISHED, outcome, time.time(), action_id),
        )

    def prune(self, older_than: float) -> int:
        """Forget the actions that finished, and whose outcome the bus stored, more than `older_than`
        seconds ago; how many. Safe once they are past their expiry: sent again, they are refused as
        expired, never applied."""
        cutoff = time.time() - older_than
        done = self.db.execute(
            "DELETE FROM actions WHERE state = ? AND published = 1 AND finished_at < ?", (FINISHED, cutoff)
        )
        return done.rowcount

    def published(self, action_id: str) -> None:
        self.db.execute("UPDATE actions SET published = 1 WHERE id = ?", (action_id,))

    def republish(self, action_id: str) -> None:
        """Send the outcome again (its action came again: the sender may have missed it)."""
        self.db.execute("UPDATE actions SET published = 0 WHERE id = ?", (action_id,))

    def get(self, action_id: str) -> Entry | None:
        row = self.db.execute(
            "SELECT id, action, state, outcome, published FROM actions WHERE id = ?", (action_id,)
        ).fetchone()
        return None if row is None else Entry(row[0], row[1], row[2], row[3], bool(row[4]))

    def unfinished(self, state: str) -> list[Entry]:
        """Entries in `state` (started or running), oldest first."""
        rows = self.db.execute(
            "SELECT id, action, state, outcome, published FROM actions WHERE state = ? ORDER BY rowid", (state,)
        )
        return [Entry(r[0], r[1], r[2], r[3], bool(r[4])) for r in rows]

    def unpublished(self) -> list[Entry]:
        rows = self.db.execute(
            "SELECT id, action, state, outcome, published FROM actions WHERE state = ? AND published = 0"
            " ORDER BY rowid",
            (FINISHED,),
        )
        return [Entry(r[0], r[1], r[2], r[3], bool(r[4])) for r in rows]

    def close(self) -> None:
        self.db.close()
