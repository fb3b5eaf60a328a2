"""The service shape (docs/architecture.md, "The service"): agents on the hypervisor hosts and a manager, over a NATS bus.

Built so far: the wire form of actions and outcomes, a nats-server with JetStream for tests and
`sova serve`, the bus's streams, actions applied at most once by an agent whose ledger outlives it, host
reports merged into the manager's Snapshot, and the manager's record of the actions it sent (Alembic).
"""
