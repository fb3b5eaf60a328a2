"""Plans and audit entries keep the wall-clock time beside the cluster's (a simulated cluster's clock runs
apart from it): ``plans.created_wall``, ``plans.decided_wall``, ``audit.wall_time``; NULL in the rows
made before, which had only the cluster's.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"


def upgrade() -> None:
    op.add_column("plans", sa.Column("created_wall", sa.Float, nullable=True))
    op.add_column("plans", sa.Column("decided_wall", sa.Float, nullable=True))
    op.add_column("audit", sa.Column("wall_time", sa.Float, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("audit") as batch:  # SQLite drops a column only by copying the table
        batch.drop_column("wall_time")
    with op.batch_alter_table("plans") as batch:
        batch.drop_column("decided_wall")
        batch.drop_column("created_wall")
