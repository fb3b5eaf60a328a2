"""Plans follow OpenStack Watcher's life cycle: ``executing`` becomes ``ongoing``, and a ``done`` plan
becomes ``succeeded``, ``partially-succeeded`` or ``failed`` by the outcomes its actions recorded.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"


def upgrade() -> None:
    with op.batch_alter_table("plans") as batch:  # "partially-succeeded" is longer than 16
        batch.alter_column("state", type_=sa.String(32), existing_type=sa.String(16), existing_nullable=False)
    connection = op.get_bind()
    connection.execute(sa.text("UPDATE plans SET state = 'ongoing' WHERE state = 'executing'"))
    done = connection.execute(sa.text("SELECT id FROM plans WHERE state = 'done'")).scalars().all()
    for plan in done:
        statuses = connection.execute(sa.text("SELECT status FROM actions WHERE plan = :plan"), {"plan": plan})
        good = [status == "ok" for status in statuses.scalars()]
        state = "succeeded" if good and all(good) else "partially-succeeded" if any(good) else "failed"
        connection.execute(sa.text("UPDATE plans SET state = :state WHERE id = :plan"), {"state": state, "plan": plan})


def downgrade() -> None:
    connection = op.get_bind()
    connection.execute(sa.text("UPDATE plans SET state = 'executing' WHERE state = 'ongoing'"))
    ended = "('succeeded', 'partially-succeeded', 'failed', 'cancelled')"
    connection.execute(sa.text(f"UPDATE plans SET state = 'done' WHERE state IN {ended}"))
    connection.execute(sa.text("UPDATE plans SET state = 'rejected' WHERE state = 'superseded'"))
    with op.batch_alter_table("plans") as batch:
        batch.alter_column("state", type_=sa.String(16), existing_type=sa.String(32), existing_nullable=False)
