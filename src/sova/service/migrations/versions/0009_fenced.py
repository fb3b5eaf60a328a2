"""Failed hosts that were fenced (their VMs may start elsewhere), one row per host, so a restarted or
standby manager does not restart a failed host's VMs before it is fenced, nor fence it again.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"


def upgrade() -> None:
    op.create_table(
        "fenced",
        sa.Column("host", sa.String(255), primary_key=True),
        sa.Column("how", sa.Text, nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("fenced")
