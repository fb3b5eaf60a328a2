"""Alembic's environment for the manager's state: run by ``sova.service.state.StateStore.upgrade`` on the
connection the store holds (SQLite by default, PostgreSQL for a manager that must survive its host)."""

from alembic import context

from sova.service.state import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
