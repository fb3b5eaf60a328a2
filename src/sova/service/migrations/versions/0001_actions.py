"""The actions the manager sent and what came of them.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None


def upgrade() -> None:
    op.create_table(
        "actions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("action", sa.Text, nullable=False),
        sa.Column("sent_at", sa.Float, nullable=False),
        sa.Column("status", sa.String(32)),
        sa.Column("outcome", sa.Text),
        sa.Column("answered_at", sa.Float),
    )
    op.create_index("actions_unanswered", "actions", ["status", "sent_at"])


def downgrade() -> None:
    op.drop_index("actions_unanswered", "actions")
    op.drop_table("actions")
