"""Tokens expire: each keeps the time after which it is refused (NULL: never, as every token made before).

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"


def upgrade() -> None:
    op.add_column("tokens", sa.Column("expires", sa.Float, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tokens") as batch:  # SQLite drops a column only by copying the table
        batch.drop_column("expires")
