"""The audit trail becomes a hash chain and append-only: each row gets ``prev_hash`` and ``hash``
(service/audit_chain.py), the rows already there chained in id order; the one-row ``audit_head`` keeps
the last id and hash; and the database refuses UPDATE and DELETE on ``audit`` (a PostgreSQL trigger
function, which refuses TRUNCATE too; SQLite triggers). A later migration that rebuilds ``audit`` on
SQLite (``batch_alter_table``) drops its triggers, and must create them again (``refuse_changes``).

Tokens get scopes (service/tokens.py): NULL, as every token made before, is its role's scopes.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

from sova.service.audit_chain import GENESIS, row_hash

revision = "0008"
down_revision = "0007"
PAGE = 1000  # rows chained per statement
_REFUSAL = "the audit trail is append-only"


def upgrade() -> None:
    op.add_column("tokens", sa.Column("scopes", sa.Text, nullable=True))
    op.add_column("audit", sa.Column("prev_hash", sa.String(64)))
    op.add_column("audit", sa.Column("hash", sa.String(64)))
    op.create_table(
        "audit_head",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("last_id", sa.Integer, nullable=False),
        sa.Column("last_hash", sa.String(64), nullable=False),
    )
    connection = op.get_bind()
    last_id, last_hash = 0, GENESIS
    select = sa.text(
        "SELECT id, time, wall_time, plan, event, policy, action, target, reason, status, message, details "
        "FROM audit "
        "WHERE id > :after ORDER BY id LIMIT :page"
    )
    update = sa.text("UPDATE audit SET prev_hash = :prev_hash, hash = :hash WHERE id = :id")
    while rows := connection.execute(select, {"after": last_id, "page": PAGE}).mappings().all():
        hashes = []
        for row in rows:
            chained_hash = row_hash(row, last_hash)
            hashes.append({"id": row["id"], "prev_hash": last_hash, "hash": chained_hash})
            last_id, last_hash = row["id"], chained_hash
        connection.execute(update, hashes)
    connection.execute(
        sa.text("INSERT INTO audit_head (id, last_id, last_hash) VALUES (1, :last_id, :last_hash)"),
        {"last_id": last_id, "last_hash": last_hash},
    )
    with op.batch_alter_table("audit") as batch:  # SQLite makes a column NOT NULL only by copying the table
        batch.alter_column("prev_hash", existing_type=sa.String(64), nullable=False)
        batch.alter_column("hash", existing_type=sa.String(64), nullable=False)
    refuse_changes()


def refuse_changes() -> None:
    """Triggers that refuse UPDATE and DELETE on audit (and TRUNCATE, on PostgreSQL)."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            f"RAISE EXCEPTION '{_REFUSAL}: % refused', TG_OP; END $$"
        )
        op.execute(
            "CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON audit "
            "FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only()"
        )
        return
    for verb in ("UPDATE", "DELETE"):
        op.execute(
            f"CREATE TRIGGER audit_no_{verb.lower()} BEFORE {verb} ON audit "
            f"BEGIN SELECT RAISE(ABORT, '{_REFUSAL}: {verb} refused'); END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER audit_append_only ON audit")
        op.execute("DROP FUNCTION audit_append_only()")
    else:
        op.execute("DROP TRIGGER audit_no_update")
        op.execute("DROP TRIGGER audit_no_delete")
    op.drop_table("audit_head")
    with op.batch_alter_table("audit") as batch:
        batch.drop_column("hash")
        batch.drop_column("prev_hash")
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("scopes")
