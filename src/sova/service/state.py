"""The manager's state in a database: SQLite by default, PostgreSQL for a manager that must survive its
host (any SQLAlchemy URL). Its schema is Alembic's (``service/migrations``), brought to the newest
revision when the store opens.

Held: every action the manager sent (recorded before it goes on the bus) with its plan and its outcome
(recorded before the outcome is acknowledged), so a restarted manager, or its standby, knows which
actions await an outcome and sends them again under the same ids (stored once by the bus, applied once
by the agent); every plan and its state (pending, ongoing, succeeded, failed, ... as plan_book.py says); the
audit trail, each row chained to the one before by its hash (service/audit_chain.py), and only ever
appended to; the tenants' storage SLOs; the hosts in maintenance and the failed hosts fenced; and the
API's tokens (hashes only).

Plans and audit entries keep two clocks: the cluster's (``created``, ``decided_at``, ``time``: what the
control loop computes with, e.g. a migration's hold-down after a restart) and the wall clock
(``created_wall``, ``decided_wall``, ``wall_time``: what people are shown). On real hosts the two agree;
a simulated cluster's runs apart (service/cluster_clock.py). Rows written before revision 0007 have only
the first.

Appending to the trail takes the one-row ``audit_head`` (the last id and hash) under a write lock, then
inserts the rows that follow it and moves the head, in one transaction: the manager and `sova token`
may append at once, and each append sees the other's head (PostgreSQL queues the second writer on the
head's row lock; SQLite lets one writer at a time into the database).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from sova.service import audit_chain

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
    sa.Column("plan", sa.Integer),
    sa.Index("actions_unanswered", "status", "sent_at"),
)
plans = sa.Table(
    "plans",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("nonce", sa.String(16), nullable=False),  # makes its actions' ids unique across stores
    sa.Column("policy", sa.String(64), nullable=False),
    sa.Column("state", sa.String(32), nullable=False),
    sa.Column("actions", sa.Text, nullable=False),  # JSON list of wire actions
    sa.Column("findings", sa.Text, nullable=False),  # JSON list of the findings it rests on
    sa.Column("decided_at", sa.Float),
    sa.Column("decided_by", sa.String(255)),
    sa.Column("created_wall", sa.Float),  # the wall clock's `created` (NULL in rows from before 0007)
    sa.Column("decided_wall", sa.Float),
    sa.Index("plans_state", "state"),
)
audit = sa.Table(
    "audit",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("time", sa.Float, nullable=False),
    sa.Column("plan", sa.Integer, nullable=False),
    sa.Column("event", sa.String(16), nullable=False),
    sa.Column("policy", sa.String(64), nullable=False),
    sa.Column("action", sa.Text, nullable=False),
    sa.Column("target", sa.String(255), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("details", sa.Text, nullable=False),
    sa.Column("wall_time", sa.Float),  # the wall clock's `time` (NULL in rows from before 0007)
    sa.Column("prev_hash", sa.String(64), nullable=False),  # the row before it's hash (audit_chain.py)
    sa.Column("hash", sa.String(64), nullable=False),
    sa.Index("audit_plan", "plan"),
    sa.Index("audit_target", "target"),
)
audit_head = sa.Table(  # one row (id 1): the last audit row's id and hash
    "audit_head",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("last_id", sa.Integer, nullable=False),
    sa.Column("last_hash", sa.String(64), nullable=False),
)
tokens = sa.Table(
    "tokens",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("hash", sa.String(128), nullable=False, unique=True),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("vms", sa.Text, nullable=False),  # JSON list: the VMs a tenant token may see and set
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("expires", sa.Float),  # time after which the token is refused (NULL: never)
    sa.Column("scopes", sa.Text),  # JSON list: the scopes it was narrowed to (NULL: its role's, tokens.py)
)
slos = sa.Table(
    "slos",
    metadata,
    sa.Column("vm", sa.String(255), primary_key=True),
    sa.Column("settings", sa.Text, nullable=False),  # JSON: the SLO as the tenant API shows it
    sa.Column("set_by", sa.String(255), nullable=False),
    sa.Column("set_at", sa.Float, nullable=False),
)
maintenance = sa.Table(
    "maintenance",
    metadata,
    sa.Column("host", sa.String(255), primary_key=True),
    sa.Column("set_by", sa.String(255), nullable=False),
    sa.Column("set_at", sa.Float, nullable=False),
)
fenced = sa.Table(
    "fenced",
    metadata,
    sa.Column("host", sa.String(255), primary_key=True),
    sa.Column("how", sa.Text, nullable=False),  # its fence's outcome, or the operator who confirmed it is off
    sa.Column("at", sa.Float, nullable=False),
)
forecasts = sa.Table(
    "forecasts",
    metadata,
    sa.Column("plan", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("made_wall", sa.Float, nullable=False),
    sa.Column("horizon", sa.Float, nullable=False),  # s of the cluster's clock the forecast looks ahead
    sa.Column("answer", sa.Text),  # JSON: the what-if's answer (report/what_if_answer.py); NULL if it failed
    sa.Column("error", sa.Text),  # why the forecast failed
    sa.Column("checked", sa.Text),  # JSON: per quantity, what the cluster then did and the error
    sa.Column("checked_wall", sa.Float),
)
MIGRATIONS = Path(__file__).with_name("migrations")
AUDIT_FIELDS = ("time", "plan", "event", "policy", "action", "target", "reason", "status", "message")
API_EVENTS = ("slo-set", "slo-cleared", "token-created", "token-revoked", "token-expired")  # on the wall clock


@dataclass(frozen=True)
class Sent:
    action_id: str
    host: str
    action: bytes
    plan: int | None = None


@dataclass(frozen=True)
class PlanRow:
    id: int
    created: float
    nonce: str
    policy: str
    state: str
    actions: list[dict]
    findings: list[dict]
    decided_at: float | None
    decided_by: str | None
    created_wall: float | None = None
    decided_wall: float | None = None


class StateStore:
    def __init__(self, url: str):
        """url: a SQLAlchemy URL, e.g. sqlite:///var/lib/sova/manager.db or postgresql+psycopg://..."""
        self.engine = sa.create_engine(url, pool_pre_ping=True)  # a database that restarted is reconnected to
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

    # ------------------------------------------------------------------ actions
    def record_sent(self, action_id: str, host: str, kind: str, action: bytes, plan: int | None = None) -> None:
        row = {"id": action_id, "host": host, "kind": kind, "action": action.decode(), "sent_at": time.time()}
        with self.engine.begin() as connection:
            exists = connection.execute(sa.select(actions.c.id).where(actions.c.id == action_id)).first()
            if exists is None:  # sent again under its id: the first record stands
                connection.execute(actions.insert().values(**row, plan=plan))

    def record_outcome(self, action_id: str, status: str, outcome: bytes) -> bool:
        """Record an outcome; False for an id this manager never sent (it is kept nowhere)."""
        values = {"status": status, "outcome": outcome.decode(), "answered_at": time.time()}
        with self.engine.begin() as connection:
            done = connection.execute(actions.update().where(actions.c.id == action_id).values(**values))
            return done.rowcount > 0

    def unanswered(self) -> list[Sent]:
        """The actions sent that no outcome has answered yet, oldest first."""
        columns = (actions.c.id, actions.c.host, actions.c.action, actions.c.plan)
        query = sa.select(*columns).where(actions.c.status.is_(None)).order_by(actions.c.sent_at)
        with self.engine.connect() as connection:
            rows = connection.execute(query).all()
        return [Sent(r.id, r.host, r.action.encode(), r.plan) for r in rows]

    def outcome(self, action_id: str) -> tuple[str, bytes] | None:
        """The status and outcome of an answered action, or None."""
        query = sa.select(actions.c.status, actions.c.outcome).where(actions.c.id == action_id)
        with self.engine.connect() as connection:
            row = connection.execute(query).first()
        return None if row is None or row.status is None else (row.status, row.outcome.encode())

    def record_unsent(self, action_id: str, plan: int, kind: str, action: bytes, status: str, outcome: bytes) -> None:
        """An action of a plan the manager decided not to send (its rails refused it, or its plan was
        cancelled): recorded as answered, so a restarted manager does not take it up again."""
        row = {"id": action_id, "host": "", "kind": kind, "action": action.decode(), "sent_at": time.time()}
        answer = {"status": status, "outcome": outcome.decode(), "answered_at": time.time(), "plan": plan}
        with self.engine.begin() as connection:
            exists = connection.execute(sa.select(actions.c.id).where(actions.c.id == action_id)).first()
            if exists is None:
                connection.execute(actions.insert().values(**row, **answer))

    def action_states(self, action_ids: list[str]) -> dict[str, str]:
        """The recorded actions among `action_ids`: their outcome's status, '' while unanswered."""
        query = sa.select(actions.c.id, actions.c.status).where(actions.c.id.in_(action_ids))
        with self.engine.connect() as connection:
            return {r.id: r.status or "" for r in connection.execute(query)}

    def action_counts(self) -> dict[tuple[str, str], int]:
        """How many actions of each (kind, status) the manager sent ('' for those awaiting an outcome)."""
        query = sa.select(actions.c.kind, actions.c.status, sa.func.count()).group_by(actions.c.kind, actions.c.status)
        with self.engine.connect() as connection:
            return {(kind, status or ""): n for kind, status, n in connection.execute(query)}

    # ------------------------------------------------------------------ plans
    def record_plan(
        self,
        plan_id: int,
        created: float,
        nonce: str,
        policy: str,
        state: str,
        wire_actions: list[dict],
        findings: list[dict],
        created_wall: float | None = None,
    ) -> None:
        """A new plan; `created` on the cluster's clock, `created_wall` on the wall clock (None: now)."""
        row = {
            "id": plan_id,
            "created": created,
            "nonce": nonce,
            "policy": policy,
            "state": state,
            "actions": json.dumps(wire_actions, allow_nan=False),
            "findings": json.dumps(findings, default=float),
            "created_wall": time.time() if created_wall is None else created_wall,
        }
        with self.engine.begin() as connection:
            before = connection.execute(sa.select(plans.c.nonce).where(plans.c.id == plan_id)).scalar()
            if before is None:
                connection.execute(plans.insert().values(**row))
            elif before != nonce:  # two managers numbered plans at once: the lease should make it impossible
                raise RuntimeError(f"plan {plan_id} is in the store already, as another manager's plan")

    def set_plan_state(
        self,
        plan_id: int,
        state: str,
        decided_at: float | None = None,
        by: str | None = None,
        decided_wall: float | None = None,
    ) -> None:
        """A plan's new state; `decided_at` (cluster clock), `decided_wall` (wall clock; None: now) and `by`
        when it is an approval, rejection or expiry."""
        values: dict = {"state": state}
        if decided_at is not None:
            wall = time.time() if decided_wall is None else decided_wall
            values |= {"decided_at": decided_at, "decided_by": by, "decided_wall": wall}
        with self.engine.begin() as connection:
            connection.execute(plans.update().where(plans.c.id == plan_id).values(**values))

    def plans(self, state: str | None = None, offset: int = 0, limit: int = 100) -> tuple[list[PlanRow], int]:
        """Plans, newest first, with the number that match."""
        where = [] if state is None else [plans.c.state == state]
        return self._page(plans, where, plans.c.id.desc(), offset, limit, _plan_row)

    def plan(self, plan_id: int) -> PlanRow | None:
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(plans).where(plans.c.id == plan_id)).first()
        return None if row is None else _plan_row(row)

    def recent_migrations(self, seconds: float) -> dict[str, float]:
        """VM -> when (cluster clock) its latest migration ended well, for those within `seconds` of the
        newest audit entry on the cluster's clock (not the API's, on the wall clock, which a simulated
        cluster's runs apart from): the hold-down a successor must keep."""
        with self.engine.connect() as connection:
            query = sa.select(sa.func.max(audit.c.time)).where(audit.c.event.not_in(API_EVENTS))
            newest = connection.execute(query).scalar()
            if newest is None:
                return {}
            query = (
                sa.select(audit.c.target, sa.func.max(audit.c.time))
                .where(audit.c.event == "finished", audit.c.status == "ok", audit.c.action.like("migrate %"))
                .where(audit.c.time >= newest - seconds)
                .group_by(audit.c.target)
            )
            return dict(connection.execute(query).all())

    def plan_counts(self) -> dict[str, int]:
        query = sa.select(plans.c.state, sa.func.count()).group_by(plans.c.state)
        with self.engine.connect() as connection:
            return dict(connection.execute(query).all())

    def last_plan_id(self) -> int:
        with self.engine.connect() as connection:
            return connection.execute(sa.select(sa.func.max(plans.c.id))).scalar() or 0

    # ------------------------------------------------------------------ audit
    def append_audit(self, entries: list, wall_times: list[float] | None = None) -> None:
        """Append audit entries (control.audit.AuditEntry) in their order, chained to the trail's head;
        `wall_times`: when each was made, on the wall clock (None: now)."""
        if not entries:
            return
        if wall_times is None:
            wall_times = [time.time()] * len(entries)
        if len(wall_times) != len(entries):
            raise ValueError(f"append_audit: {len(entries)} entries but {len(wall_times)} wall-clock times")
        rows = [
            {k: getattr(e, k) for k in AUDIT_FIELDS}
            | {"details": json.dumps(e.details, default=float), "wall_time": wall_time}
            for e, wall_time in zip(entries, wall_times, strict=True)
        ]
        with self.engine.begin() as connection:
            # a write first, so this transaction holds the database's (SQLite) or the head row's
            # (PostgreSQL) write lock before it reads the head: no other writer can chain to the same head
            connection.execute(audit_head.update().where(audit_head.c.id == 1).values(last_id=audit_head.c.last_id))
            head = connection.execute(sa.select(audit_head).where(audit_head.c.id == 1)).one()
            chained = audit_chain.chained(rows, head.last_id, head.last_hash)
            connection.execute(audit.insert(), chained)
            last = chained[-1]
            connection.execute(
                audit_head.update().where(audit_head.c.id == 1).values(last_id=last["id"], last_hash=last["hash"])
            )

    def verify_audit(self) -> audit_chain.ChainCheck:
        """Walk the audit trail's hash chain up to its head: how many rows hold, and the first that does not."""
        with self.engine.connect() as connection:
            head = connection.execute(sa.select(audit_head).where(audit_head.c.id == 1)).one()
            query = sa.select(audit).where(audit.c.id <= head.last_id).order_by(audit.c.id)
            rows = connection.execution_options(yield_per=1000).execute(query).mappings()
            return audit_chain.verify(rows, head.last_id, head.last_hash)

    def audit(
        self,
        offset: int = 0,
        limit: int = 100,
        event: str | None = None,
        target: str | None = None,
        plan: int | None = None,
        targets: list[str] | None = None,
    ) -> tuple[list[dict], int]:
        """Audit entries, oldest first, filtered, with the number that match (`targets`: only these)."""
        where = []
        for column, value in ((audit.c.event, event), (audit.c.target, target), (audit.c.plan, plan)):
            if value is not None:
                where.append(column == value)
        if targets is not None:
            where.append(audit.c.target.in_(targets))
        return self._page(audit, where, audit.c.id, offset, limit, _audit_row)

    # ------------------------------------------------------------------ storage SLOs
    def slos(self) -> dict[str, dict]:
        """Every VM's SLO: its settings (as the tenant API shows them), who set it and when."""
        with self.engine.connect() as connection:
            rows = connection.execute(sa.select(slos).order_by(slos.c.vm)).all()
        return {r.vm: {"settings": json.loads(r.settings), "set_by": r.set_by, "set_at": r.set_at} for r in rows}

    def put_slo(self, vm: str, settings: dict | None, by: str) -> None:
        """Keep a VM's SLO (None: remove it)."""
        with self.engine.begin() as connection:
            connection.execute(slos.delete().where(slos.c.vm == vm))
            if settings is not None:
                row = {"vm": vm, "settings": json.dumps(settings), "set_by": by, "set_at": time.time()}
                connection.execute(slos.insert().values(**row))

    # ------------------------------------------------------------------ maintenance
    def maintenance(self) -> dict[str, dict]:
        """The hosts in maintenance: who put each there and when, in the order they entered it."""
        with self.engine.connect() as connection:
            rows = connection.execute(sa.select(maintenance).order_by(maintenance.c.set_at)).all()
        return {r.host: {"set_by": r.set_by, "set_at": r.set_at} for r in rows}

    def set_maintenance(self, host: str, by: str | None) -> None:
        """Put a host into maintenance on behalf of `by` (None: release it)."""
        with self.engine.begin() as connection:
            connection.execute(maintenance.delete().where(maintenance.c.host == host))
            if by is not None:
                connection.execute(maintenance.insert().values(host=host, set_by=by, set_at=time.time()))

    # ------------------------------------------------------------------ fenced hosts
    def fenced(self) -> dict[str, dict]:
        """The failed hosts fenced (their VMs may start elsewhere): how, and when, in the order they were."""
        with self.engine.connect() as connection:
            rows = connection.execute(sa.select(fenced).order_by(fenced.c.at)).all()
        return {r.host: {"how": r.how, "at": r.at} for r in rows}

    def set_fenced(self, host: str, how: str | None) -> None:
        """A failed host fenced, and how (None: it reports again, so it is no longer)."""
        with self.engine.begin() as connection:
            connection.execute(fenced.delete().where(fenced.c.host == host))
            if how is not None:
                connection.execute(fenced.insert().values(host=host, how=how, at=time.time()))

    # ------------------------------------------------------------------ forecasts
    def put_forecast(self, plan_id: int, horizon: float, answer: dict | None, error: str = "") -> None:
        """A plan's forecast (the what-if's answer), or why it failed."""
        row = {
            "plan": plan_id,
            "made_wall": time.time(),
            "horizon": horizon,
            "answer": None if answer is None else json.dumps(answer, allow_nan=False),
            "error": error or None,
        }
        with self.engine.begin() as connection:
            connection.execute(forecasts.delete().where(forecasts.c.plan == plan_id))
            connection.execute(forecasts.insert().values(**row))

    def put_forecast_check(self, plan_id: int, checked: dict) -> None:
        """What the cluster did over the horizon after the plan ran, against its forecast."""
        values = {"checked": json.dumps(checked, allow_nan=False), "checked_wall": time.time()}
        with self.engine.begin() as connection:
            connection.execute(forecasts.update().where(forecasts.c.plan == plan_id).values(**values))

    def forecasts(self, plan_ids: list[int]) -> dict[int, dict]:
        """plan -> its forecast row as the API shows it, for those of `plan_ids` that have one."""
        query = sa.select(forecasts).where(forecasts.c.plan.in_(plan_ids))
        with self.engine.connect() as connection:
            return {
                row.plan: {
                    "made": row.made_wall,
                    "horizon": row.horizon,
                    "answer": None if row.answer is None else json.loads(row.answer),
                    "error": row.error,
                    "checked": None if row.checked is None else json.loads(row.checked),
                    "checked_at": row.checked_wall,
                }
                for row in connection.execute(query)
            }

    def plan_outcomes(self, plan_id: int) -> list[tuple[str, str, dict]]:
        """The kind, status and outcome of each of a plan's actions that was answered."""
        query = sa.select(actions.c.kind, actions.c.status, actions.c.outcome).where(
            actions.c.plan == plan_id, actions.c.status.is_not(None)
        )
        with self.engine.connect() as connection:
            return [(kind, status, json.loads(outcome)) for kind, status, outcome in connection.execute(query)]

    def _page(self, table, where, order, offset: int, limit: int, row_of) -> tuple[list, int]:
        with self.engine.connect() as connection:
            total = connection.execute(sa.select(sa.func.count()).select_from(table).where(*where)).scalar()
            rows = connection.execute(sa.select(table).where(*where).order_by(order).offset(offset).limit(limit))
            return [row_of(r) for r in rows], total

    def close(self) -> None:
        self.engine.dispose()


def _plan_row(row) -> PlanRow:
    return PlanRow(
        row.id,
        row.created,
        row.nonce,
        row.policy,
        row.state,
        json.loads(row.actions),
        json.loads(row.findings),
        row.decided_at,
        row.decided_by,
        row.created_wall,
        row.decided_wall,
    )


def _audit_row(row) -> dict:
    return {
        "id": row.id,
        **{k: getattr(row, k) for k in AUDIT_FIELDS},
        "details": json.loads(row.details),
        "wall_time": row.wall_time,
    }
