"""Hosts in maintenance (drained), one row per host, so a restarted or standby manager keeps them.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    op.create_table(
        "maintenance",
        sa.Column("host", sa.String(255), primary_key=True),
        sa.Column("set_by", sa.String(255), nullable=False),
        sa.Column("set_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("maintenance")
