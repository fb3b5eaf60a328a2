"""Which manager leads: a lease in JetStream's key-value store (bucket ``sova_leader``, key ``leader``).

The bucket's entries expire `ttl` seconds after they are written. A manager takes the lease by creating
the key (refused while it exists), and keeps it by rewriting it every ttl/3 with a compare-and-set on
the revision it last wrote, so two managers can never both renew it. A holder that has not renewed for
ttl minus a margin stops counting itself the leader before the entry can expire on the server, so the
standby, which can take the lease only once it expired, never overlaps with it. A clean stop deletes the
key: the standby takes over at its next try instead of after the expiry.
"""

from __future__ import annotations

import logging
import time

import nats.errors
import nats.js.errors
from nats.js.api import KeyValueConfig, StorageType
from nats.js.kv import KeyValue

from sova.service.bus import Bus

log = logging.getLogger(__name__)
BUCKET, KEY = "sova_leader", "leader"


class Lease:
    def __init__(self, bus: Bus, name: str, ttl: float = 10.0):
        """name: this manager's, as the lease shows it; ttl: seconds a silent leader keeps the lease."""
        self.bus, self.name, self.ttl = bus, name, ttl
        self.kv: KeyValue | None = None
        self.revision = 0
        self.valid_until = 0.0  # monotonic time until which this manager may act as the leader
        self.next_try = 0.0
        self.margin = min(1.0, ttl / 4)

    def held(self) -> bool:
        return time.monotonic() < self.valid_until

    async def renew(self) -> bool:
        """Take or keep the lease if it is time to (every ttl/3); whether this manager holds it now."""
        now = time.monotonic()
        if now < self.next_try:
            return self.held()
        self.next_try = now + self.ttl / 3
        try:
            if self.kv is None:
                self.kv = await self._bucket()
            value = self.name.encode()
            if self.held():
                self.revision = await self.kv.update(KEY, value, last=self.revision)
            else:
                self.revision = await self.kv.create(KEY, value)
                log.info("took the lease as %s", self.name)
            self.valid_until = now + self.ttl - self.margin
        except nats.js.errors.KeyWrongLastSequenceError:  # another holds it, or took it over
            if self.held():
                log.warning("lost the lease to %s", await self.holder() or "another manager")
            self.valid_until = 0.0
        except nats.js.errors.APIError as err:  # not a refusal of the compare-and-set: say what it is
            log.warning("cannot take or renew the lease: %s", err)
            self.valid_until = 0.0
        except (nats.errors.Error, TimeoutError, OSError) as err:  # the bus away: hold on until it runs out
            log.warning("cannot renew the lease: %s", err or type(err).__name__)
        return self.held()

    async def _bucket(self) -> KeyValue:
        """The lease's bucket, made if missing (with the bus's replicas). One made by a manager with another
        --lease-ttl is used as it is, with its TTL: the entries expire by the bucket's, so this manager
        must count on no more."""
        kv = await self.bus.bucket(KeyValueConfig(bucket=BUCKET, ttl=self.ttl, history=1, storage=StorageType.FILE))
        ttl = (await kv.status()).ttl
        if ttl and ttl != self.ttl:
            log.warning("the lease's bucket has a TTL of %g s (this manager was given %g s); using it", ttl, self.ttl)
            self.ttl, self.margin = ttl, min(1.0, ttl / 4)
        return kv

    async def holder(self) -> str | None:
        """The name of the manager holding the lease, or None."""
        if self.kv is None:
            return None
        try:
            entry = await self.kv.get(KEY)
        except (nats.js.errors.KeyNotFoundError, nats.js.errors.KeyDeletedError):
            return None
        return entry.value.decode() if entry.value else None

    async def release(self) -> None:
        """Give the lease up at once (a clean stop), if this manager holds it."""
        if self.kv is not None and self.held():
            self.valid_until = 0.0
            try:
                await self.kv.delete(KEY, last=self.revision)
            except (nats.errors.Error, nats.js.errors.APIError, TimeoutError, OSError) as err:
                log.warning("could not release the lease (it expires by itself): %s", err)
