"""The manager's state in a database: SQLite by default, PostgreSQL for a manager that must survive its
host (any SQLAlchemy URL). Its schema is Alembic's (``service/migrations``), brought to the newest
revision when the store opens.

Held so far: every action the manager sent, recorded before it goes on the bus, and its outcome, recorded
before the outcome is acknowledged. So a restarted manager knows which actions await an outcome, and can
send them again under the same ids (stored once by the bus, applied once by the agent).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

metadata = sa.MetaData()
actions = sa.Table(
    "actions",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("action", sa.Text, nullable=False),  # the action as it went on the wire
    sa.Column("sent_at", sa.Float, nullable=False),
    sa.Column("status", sa.String(32)),  # the outcome's status; NULL while none came
    sa.Column("outcome", sa.Text),
    sa.Column("answered_at", sa.Float),
    sa.Index("actions_unanswered", "status", "sent_at"),
)
MIGRATIONS = Path(__file__).with_name("migrations")


@dataclass(frozen=True)
class Sent:
    action_id: str
    host: str
    action: bytes


class StateStore:
    def __init__(self, url: str):
        """url: a SQLAlchemy URL, e.g. sqlite:///var/lib/sova/manager.db or postgresql+psycopg://..."""
        self.engine = sa.create_engine(url)
        self.upgrade()

    def upgrade(self) -> None:
        """Bring the schema to the newest revision (nothing to do when it is there already)."""
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        with self.engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    def revision(self) -> str | None:
        with self.engine.connect() as connection:
            return connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()

    def record_sent(self, action_id: str, host: str, kind: str, action: bytes) -> None:
        row = {"id": action_id, "host": host, "kind": kind, "action": action.decode(), "sent_at": time.time()}
        with self.engine.begin() as connection:
            exists = connection.execute(sa.select(actions.c.id).where(actions.c.id == action_id)).first()
            if exists is None:  # sent again under its id: the first record stands
                connection.execute(actions.insert().values(**row))

    def record_outcome(self, action_id: str, status: str, outcome: bytes) -> bool:
        """Record an outcome; False for an id this manager never sent (it is kept nowhere)."""
        values = {"status": status, "outcome": outcome.decode(), "answered_at": time.time()}
        with self.engine.begin() as connection:
            done = connection.execute(actions.update().where(actions.c.id == action_id).values(**values))
            return done.rowcount > 0

    def unanswered(self) -> list[Sent]:
        """The actions sent that no outcome has answered yet, oldest first."""
        query = sa.select(actions.c.id, actions.c.host, actions.c.action).where(actions.c.status.is_(None))
        with self.engine.connect() as connection:
            rows = connection.execute(query.order_by(actions.c.sent_at)).all()
        return [Sent(r.id, r.host, r.action.encode()) for r in rows]

    def outcome(self, action_id: str) -> tuple[str, bytes] | None:
        """The status and outcome of an answered action, or None."""
        query = sa.select(actions.c.status, actions.c.outcome).where(actions.c.id == action_id)
        with self.engine.connect() as connection:
            row = connection.execute(query).first()
        return None if row is None or row.status is None else (row.status, row.outcome.encode())

    def close(self) -> None:
        self.engine.dispose()
