"""The bus between agents and the manager: NATS, with JetStream for what must not be lost.

Three file-stored streams: SOVA_ACTIONS (``sova.action.HOST``, the manager's actions for a host's agent),
SOVA_OUTCOMES (``sova.outcome.HOST``, what came of them) and SOVA_LOCAL (``sova.local.HOST``, what the
agents' own loops did, for the manager's audit trail). Every message carries its action's id as
JetStream's message id, so a message sent twice within the duplicate window (a sender that restarted and
sent again) is stored once. Each agent reads its host's actions through a durable consumer of its own,
the manager all outcomes through one: what a reader has not acknowledged is delivered again after it,
or the bus, restarts.
"""

from __future__ import annotations

import asyncio
import logging
import re
import ssl
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

import nats
import nats.js.errors
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StorageType, StreamConfig

log = logging.getLogger(__name__)
ACTIONS, OUTCOMES, LOCAL = "SOVA_ACTIONS", "SOVA_OUTCOMES", "SOVA_LOCAL"
STREAMS = {"sova.action.": ACTIONS, "sova.outcome.": OUTCOMES, "sova.local.": LOCAL}  # subject prefix: stream
DUPLICATE_WINDOW = 3600.0  # s: a re-sent action or outcome within an hour is stored once
MAX_AGE = 7 * 86400.0  # s the streams keep a message: a week, as an agent's ledger remembers an action
_HOST_TOKEN = re.compile(r"^[A-Za-z0-9_-]+$")
RETRY = 1.0  # s after which the bus offers again a message the store could not take


async def hand_back(messages: list) -> None:
    """Give messages not yet taken back to the bus, to be delivered again after `RETRY` s (a bus that
    does not hear it delivers them after its acknowledgement wait, as before)."""
    for message in messages:
        try:
            await message.nak(delay=RETRY)
        except Exception as err:
            log.warning("could not hand a message back to the bus: %s", err or type(err).__name__)


class BusError(RuntimeError):
    """The bus cannot be reached, or a name cannot be a subject."""


def host_token(host: str) -> str:
    """A host name as one subject token: letters, digits, '-' and '_' only (no '.', '*', '>' or spaces)."""
    if not _HOST_TOKEN.match(host):
        raise BusError(f"host name {host!r} cannot be a bus subject: use letters, digits, '-' and '_'")
    return host


def action_subject(host: str) -> str:
    return f"sova.action.{host_token(host)}"


def outcome_subject(host: str) -> str:
    return f"sova.outcome.{host_token(host)}"


def local_subject(host: str) -> str:
    return f"sova.local.{host_token(host)}"


class Listener(ABC):
    """A subscription to plain NATS subject `subject` (with wildcards) while started; messages go to
    `_take`. For what a later message supersedes (reports, SLO status), so nothing is stored."""

    subject = ""
    bus: Bus
    subscription = None

    async def start(self) -> None:
        self.subscription = await self.bus.client.subscribe(self.subject, cb=self._take)

    async def stop(self) -> None:
        if self.subscription is not None:
            await self.subscription.unsubscribe()
            self.subscription = None

    @abstractmethod
    async def _take(self, message) -> None:
        """Handle one message of the subject."""


@dataclass(frozen=True)
class TlsFiles:
    """TLS to the bus: the CA that signed the server's certificate, and this client's own (optional)."""

    ca: Path
    certificate: Path | None = None
    key: Path | None = None

    def context(self) -> ssl.SSLContext:
        try:
            context = ssl.create_default_context(cafile=str(self.ca))
            if self.certificate is not None:
                context.load_cert_chain(str(self.certificate), str(self.key) if self.key else None)
        except (OSError, ssl.SSLError) as err:
            raise BusError(f"the bus's TLS files ({self.ca}, {self.certificate}): {err}") from None
        return context


@dataclass
class Bus:
    """A connection to NATS with the JetStream streams in place."""

    client: Client
    js: JetStreamContext
    closing: list = field(default_factory=list)  # non-empty once close() began

    @classmethod
    async def connect(
        cls,
        url: str,
        user: str | None = None,
        password: str | None = None,
        name: str = "sova",
        timeout: float = 10.0,
        tls: TlsFiles | None = None,
    ) -> Bus:
        """Connect (reconnecting for ever after a bus restart) and create the streams if missing; over TLS
        when `tls` is given (or the URL is tls://), the server checked against `tls.ca`."""

        async def error(err: Exception) -> None:  # one line, not nats-py's default traceback
            log.warning("bus (%s): %s", name, err or type(err).__name__)

        closing = []  # set once this side closes: a disconnection then is no fault

        async def disconnected() -> None:
            if not closing:
                log.warning("bus (%s): disconnected; reconnecting", name)

        async def reconnected() -> None:
            log.info("bus (%s): reconnected", name)

        context = tls.context() if tls is not None else None
        connecting = nats.connect(
            url,
            tls=context,
            error_cb=error,
            disconnected_cb=disconnected,
            reconnected_cb=reconnected,
            user=user,
            password=password,
            name=name,
            connect_timeout=5,
            reconnect_time_wait=0.2,
            ping_interval=5,  # a silent network (a partition) is found in about 15 s, not nats-py's 4 min
            max_outstanding_pings=2,
            max_reconnect_attempts=-1,
            allow_reconnect=True,
        )
        try:  # the first connection has a deadline: with reconnects for ever nats-py would retry it for ever
            client = await asyncio.wait_for(connecting, timeout)
        except Exception as err:  # nats-py raises several unrelated types for one cause
            raise BusError(f"cannot connect to the bus at {url}: {err or type(err).__name__}") from None
        bus = cls(client, client.jetstream(), closing)
        await bus._ensure_streams()
        return bus

    async def _ensure_streams(self) -> None:
        for prefix, name in STREAMS.items():
            config = StreamConfig(
                name=name,
                subjects=[prefix + "*"],
                storage=StorageType.FILE,
                duplicate_window=DUPLICATE_WINDOW,
                max_age=MAX_AGE,
            )
            try:
                await self.js.add_stream(config)  # the same configuration again is accepted as is
            except nats.js.errors.BadRequestError:  # there, with an earlier version's settings
                await self.js.update_stream(config)

    async def publish(self, subject: str, message_id: str, payload: bytes) -> bool:
        """Store a message once per id; False when the bus had it already (a duplicate)."""
        ack = await self.js.publish(subject, payload, headers={"Nats-Msg-Id": message_id}, timeout=10)
        return not ack.duplicate

    async def reader(self, subject: str, durable: str, ack_wait: float = 30.0) -> JetStreamContext.PullSubscription:
        """A durable pull consumer of `subject`: unacknowledged messages come again after `ack_wait`."""
        config = ConsumerConfig(
            durable_name=durable,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            ack_wait=ack_wait,
            filter_subject=subject,
        )
        stream = next(name for prefix, name in STREAMS.items() if subject.startswith(prefix))
        return await self.js.pull_subscribe(subject, durable=durable, stream=stream, config=config)

    async def close(self) -> None:
        """Close the connection; every publish was acknowledged by JetStream already, so nothing is lost."""
        self.closing.append(True)
        if not self.client.is_closed:
            await self.client.close()
