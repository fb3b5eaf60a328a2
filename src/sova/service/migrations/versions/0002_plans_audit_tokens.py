"""Plans and their states, the audit trail, API tokens, and the plan each action belongs to.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    with op.batch_alter_table("actions") as batch:
        batch.add_column(sa.Column("plan", sa.Integer))
    op.create_table(
        "plans",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("nonce", sa.String(16), nullable=False),
        sa.Column("policy", sa.String(64), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("actions", sa.Text, nullable=False),
        sa.Column("findings", sa.Text, nullable=False),
        sa.Column("decided_at", sa.Float),
        sa.Column("decided_by", sa.String(255)),
    )
    op.create_index("plans_state", "plans", ["state"])
    op.create_table(
        "audit",
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
    )
    op.create_index("audit_plan", "audit", ["plan"])
    op.create_index("audit_target", "audit", ["target"])
    op.create_table(
        "tokens",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("hash", sa.String(128), nullable=False, unique=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("vms", sa.Text, nullable=False),  # JSON list: the VMs a tenant token may see and set
        sa.Column("created", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("tokens")
    op.drop_index("audit_target", "audit")
    op.drop_index("audit_plan", "audit")
    op.drop_table("audit")
    op.drop_index("plans_state", "plans")
    op.drop_table("plans")
    with op.batch_alter_table("actions") as batch:
        batch.drop_column("plan")
