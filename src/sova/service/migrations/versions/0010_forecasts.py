"""Each plan's forecast (what-if: the plan applied against nothing done, over a horizon) and, once the plan
ran and the horizon passed, what the cluster then did and the forecast's error (service/plan_forecasts.py).

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"


def upgrade() -> None:
    op.create_table(
        "forecasts",
        sa.Column("plan", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("made_wall", sa.Float, nullable=False),
        sa.Column("horizon", sa.Float, nullable=False),
        sa.Column("answer", sa.Text),
        sa.Column("error", sa.Text),
        sa.Column("checked", sa.Text),
        sa.Column("checked_wall", sa.Float),
    )


def downgrade() -> None:
    op.drop_table("forecasts")
