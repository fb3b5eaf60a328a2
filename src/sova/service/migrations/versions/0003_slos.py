"""Tenants' storage SLOs, one row per VM.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    op.create_table(
        "slos",
        sa.Column("vm", sa.String(255), primary_key=True),
        sa.Column("settings", sa.Text, nullable=False),  # JSON: the SLO as the tenant API shows it
        sa.Column("set_by", sa.String(255), nullable=False),
        sa.Column("set_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("slos")
