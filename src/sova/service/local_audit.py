"""What the agents' own loops did, into the manager's audit trail.

An agent's local loops (VF scheduling, Dom0 tuning, the storage SLO engine) act at once, without the
manager; each audit entry they write goes to the manager on ``sova.local.HOST`` (JetStream, so entries
sent while the manager is down reach it when it returns). Each entry carries an id (the agent's run and
a sequence number), so one sent again is stored once. An entry the bus did not take stays queued in the
agent (at most QUEUE_MAX; beyond that the oldest are dropped, with a warning) and is sent again at the
next step. The leading manager reads them through its durable consumer and writes them to its store
with the host they came from, before it acknowledges them. Each entry carries the wall-clock time the agent
made it at (``wall_time``, beside the entry's own time on the cluster's clock), so one that waited on the
bus while the manager was down is not shown as made when it arrived.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import time
from collections import deque
from dataclasses import asdict, fields

from sova.control.audit import AuditEntry
from sova.service.bus import Bus, hand_back, local_subject
from sova.service.state import StateStore

log = logging.getLogger(__name__)
QUEUE_MAX = 10_000
_FIELDS = {f.name for f in fields(AuditEntry)}
_TYPES = {"float": (int, float), "int": int, "str": str, "dict": dict}  # AuditEntry's field types, as written


class LocalAuditSender:
    """An agent's queue of audit entries on their way to the manager."""

    def __init__(self, bus: Bus):
        self.bus = bus
        self.run = secrets.token_hex(4)  # this run of the agent: ids stay unique across its restarts
        self.sequence = 0
        self.queue: deque[tuple[str, str, bytes]] = deque()  # (subject, message id, entry)
        self.dropped = 0

    def add(self, host: str, entries: list[AuditEntry]) -> None:
        """Queue what the local loops of `host` did."""
        for entry in entries:
            self.sequence += 1
            payload = json.dumps(asdict(entry) | {"wall_time": time.time()}, default=float).encode()
            self.queue.append((local_subject(host), f"local-{host}-{self.run}-{self.sequence}", payload))
        while len(self.queue) > QUEUE_MAX:
            self.queue.popleft()
            self.dropped += 1
            if self.dropped in (1, 10, 100) or self.dropped % 1000 == 0:
                log.warning("the bus is away: %d local audit entries dropped so far", self.dropped)

    async def send(self) -> int:
        """Send what is queued, in order, until the bus refuses one; how many went."""
        sent = 0
        while self.queue:
            subject, message_id, payload = self.queue[0]
            await self.bus.publish(subject, message_id, payload)
            self.queue.popleft()
            sent += 1
        return sent


class LocalAuditReader:
    """The manager's reader of the agents' entries, into its store's audit trail."""

    def __init__(self, bus: Bus, store: StateStore, durable: str = "manager-local"):
        self.bus, self.store, self.durable = bus, store, durable
        self.reader = None

    async def collect(self, wait: float = 0.01) -> int:
        """Write the entries that arrive within `wait` seconds to the store; how many."""
        if self.reader is None:
            self.reader = await self.bus.reader("sova.local.*", durable=self.durable)
        try:
            messages = await self.reader.fetch(batch=256, timeout=wait)
        except TimeoutError:
            return 0
        entries, wall_times = [], []
        for message in messages:
            try:
                entry, wall_time = _entry(message.data, message.subject.rsplit(".", 1)[-1])
            except (ValueError, TypeError) as err:
                log.warning("dropped a malformed local audit entry on %s: %s", message.subject, err)
            else:
                entries.append(entry)
                wall_times.append(wall_time)
        try:
            self.store.append_audit(entries, wall_times)
        except Exception:  # the store away: they come again within a second (bus.hand_back)
            await hand_back(messages)
            raise
        for message in messages:
            await message.ack()
        return len(entries)


def _entry(payload: bytes, host: str) -> tuple[AuditEntry, float]:
    """An entry as an agent sent it, and when it made it on the wall clock (an agent of an earlier version
    says not: when it came); the host is the subject's (an agent speaks only for its own)."""
    raw = json.loads(payload)
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    wall_time = raw.get("wall_time", time.time())
    if isinstance(wall_time, bool) or not isinstance(wall_time, int | float) or not math.isfinite(wall_time):
        raise ValueError(f"wall_time must be a finite number of seconds, got {wall_time!r}")
    entry = AuditEntry(**{key: value for key, value in raw.items() if key in _FIELDS})
    for field in fields(AuditEntry):
        if not isinstance(getattr(entry, field.name), _TYPES[field.type]):
            raise ValueError(f"{field.name} must be {field.type}, got {getattr(entry, field.name)!r}")
    return AuditEntry(**(asdict(entry) | {"details": entry.details | {"host": host}})), float(wall_time)
