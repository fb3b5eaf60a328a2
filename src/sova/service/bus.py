"""The bus between agents and the manager: NATS, with JetStream for what must not be lost.

Three file-stored streams: SOVA_ACTIONS (``sova.action.HOST``, the manager's actions for a host's agent),
SOVA_OUTCOMES (``sova.outcome.HOST``, what came of them) and SOVA_LOCAL (``sova.local.HOST``, what the
agents' own loops did, for the manager's audit trail). Every message carries its action's id as
JetStream's message id, so a message sent twice within the duplicate window (a sender that restarted and
sent again) is stored once. Each agent reads its host's actions through a durable consumer of its own,
the manager all outcomes through one: what a reader has not acknowledged is delivered again after it,
or the bus, restarts. The manager makes the streams; an agent only uses them (its bus user may do no more,
service/bus_users.py), and each connection's inbox is its user's own (``inbox_prefix``).

The bus may be one nats-server or a JetStream cluster: `connect` takes every server's URL, and the
client moves to another server when the one it uses goes. The streams and the key-value buckets get as
many replicas as URLs were given, at most three (``replicas_for``): every Sova process is given the
same list, so all agree without asking the servers, and a stream made with fewer (before the bus became
a cluster) is raised to that number; none is ever lowered. A three-server cluster then loses no stored
message when one server dies, and goes on once the others have elected new stream leaders.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import ssl
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from pathlib import Path

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, KeyValueConfig, StorageType, StreamConfig
from nats.js.kv import KeyValue

log = logging.getLogger(__name__)
ACTIONS, OUTCOMES, LOCAL = "SOVA_ACTIONS", "SOVA_OUTCOMES", "SOVA_LOCAL"
STREAMS = {"sova.action.": ACTIONS, "sova.outcome.": OUTCOMES, "sova.local.": LOCAL}  # subject prefix: stream
DUPLICATE_WINDOW = 3600.0  # s: a re-sent action or outcome within an hour is stored once
MAX_AGE = 7 * 86400.0  # s the streams keep a message: a week, as an agent's ledger remembers an action
MOST_REPLICAS = 3  # a stream's copies: three survive the loss of one server and keep a quorum of two
_HOST_TOKEN = re.compile(r"^[A-Za-z0-9_-]+$")
CLOSE_SECONDS = 5.0  # s a closing connection is waited for
_CLOSING: set[asyncio.Future] = set()  # closes of abandoned connections under way
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


def server_urls(text: str) -> list[str]:
    """The servers of a `--nats` value: one URL, or a cluster's URLs separated by commas."""
    urls = [url.strip() for url in text.split(",")]
    for url in urls:
        if not url.startswith(("nats://", "tls://")) or len(url) <= len("nats://"):
            raise BusError(f"{text!r}: expected nats://HOST:PORT or tls://HOST:PORT, several separated by commas")
    return urls


def replicas_for(urls: list[str]) -> int:
    """How many replicas the streams and buckets get on a bus reached through `urls`."""
    return min(MOST_REPLICAS, len(urls))


def host_token(host: str) -> str:
    """A host name as one subject token: letters, digits, '-' and '_' only (no '.', '*', '>' or spaces)."""
    if not _HOST_TOKEN.match(host):
        raise BusError(f"host name {host!r} cannot be a bus subject: use letters, digits, '-' and '_'")
    return host


def inbox_prefix(user: str | None) -> str:
    """Where replies to a user's requests and its consumers' messages come: ``_INBOX.USER``, so a user
    allowed to subscribe only to its own inbox sees no other's (``_INBOX`` for no user, or one whose name
    cannot be a subject token)."""
    return f"_INBOX.{user}" if user and _HOST_TOKEN.match(user) else "_INBOX"


def action_consumer(host: str) -> str:
    """The durable consumer through which a host's agent reads its actions."""
    return f"agent-{host_token(host)}"


def report_subject(host: str) -> str:
    return f"sova.report.{host_token(host)}"


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


async def _first_connection(client: Client, connecting: asyncio.Future, timeout: float) -> None:
    """Wait at most `timeout` s for `client`'s first connection. Not asyncio.wait_for: it waits for the
    cancelled attempt to end, and nats-py swallows a cancellation in some of its waits (its flush, its
    reconnect task) and then retries for ever; so at the deadline, or when the caller is cancelled, the
    attempt is given up (`_abandon`) and the caller hears of it whatever the attempt does."""
    try:
        done, _ = await asyncio.wait({connecting}, timeout=timeout)
    except asyncio.CancelledError:  # the caller gave up (a daemon told to stop): so does the attempt
        _abandon(client, connecting)
        raise
    if done:
        connecting.result()  # its error, if it failed
        return
    _abandon(client, connecting)
    raise TimeoutError(f"no connection within {timeout:g} s")


def _abandon(client: Client, connecting: asyncio.Future) -> None:
    """Give up a connection attempt for good: its retries bounded (nats-py drops a server from its pool
    after max_reconnect_attempts failures only when that is above 0, and gives up once the pool is empty),
    the attempt cancelled, and the connection closed should it come up all the same."""
    client.options["allow_reconnect"] = False
    client.options["max_reconnect_attempts"] = 1
    connecting.add_done_callback(functools.partial(_ended, client))
    connecting.cancel()


def _ended(client: Client, attempt: asyncio.Future) -> None:
    """An abandoned attempt's end: its error retrieved (it is the caller's timeout's cause, not to be
    logged at exit), its connection closed if it made one."""
    if not attempt.cancelled() and attempt.exception() is None and client.is_connected:
        closing = asyncio.ensure_future(_close(client))
        _CLOSING.add(closing)  # held until done: the loop keeps only a weak reference to a task
        closing.add_done_callback(_CLOSING.discard)


async def _close(client: Client) -> None:
    """Close `client`, waiting at most CLOSE_SECONDS: nats-py can wait for ever on a socket a dead server
    left half-open."""
    closing = asyncio.ensure_future(client.close())
    done, _ = await asyncio.wait({closing}, timeout=CLOSE_SECONDS)
    if not done:
        log.warning("bus: the connection did not close within %g s; left behind", CLOSE_SECONDS)
        closing.add_done_callback(_retrieved)


def _retrieved(attempt: asyncio.Future) -> None:
    if not attempt.cancelled():
        attempt.exception()


@dataclass
class Bus:
    """A connection to NATS with the JetStream streams in place."""

    client: Client
    js: JetStreamContext
    closing: list = field(default_factory=list)  # non-empty once close() began
    replicas: int = 1  # of each stream and bucket this side makes or finds with fewer

    @classmethod
    async def connect(
        cls,
        url: str,
        user: str | None = None,
        password: str | None = None,
        name: str = "sova",
        timeout: float = 10.0,
        tls: TlsFiles | None = None,
        streams: bool = True,
    ) -> Bus:
        """Connect (reconnecting for ever after a bus restart, to any of a cluster's servers) and, with
        `streams`, create the streams if missing (the manager does; an agent leaves it to the manager, as its
        user may not); over TLS when `tls` is given (or the URL is tls://), the server checked against
        `tls.ca`. `url`: one server's, or a cluster's, separated by commas."""
        urls = server_urls(url)

        async def error(err: Exception) -> None:  # one line, not nats-py's default traceback
            log.warning("bus (%s): %s", name, err or type(err).__name__)

        closing = []  # set once this side closes: a disconnection then is no fault

        async def disconnected() -> None:
            if not closing:
                log.warning("bus (%s): disconnected; reconnecting", name)

        async def reconnected() -> None:
            log.info("bus (%s): reconnected", name)

        context = tls.context() if tls is not None else None
        client = Client()
        connecting = client.connect(
            servers=urls,
            tls=context,
            error_cb=error,
            disconnected_cb=disconnected,
            reconnected_cb=reconnected,
            user=user,
            password=password,
            name=name,
            inbox_prefix=inbox_prefix(user),
            connect_timeout=5,
            reconnect_time_wait=0.2,
            ping_interval=5,  # a silent network (a partition) is found in about 15 s, not nats-py's 4 min
            max_outstanding_pings=2,
            max_reconnect_attempts=-1,
            allow_reconnect=True,
        )
        try:  # the first connection has a deadline: with reconnects for ever nats-py would retry it for ever
            await _first_connection(client, asyncio.ensure_future(connecting), timeout)
        except Exception as err:  # nats-py raises several unrelated types for one cause
            raise BusError(f"cannot connect to the bus at {url}: {err or type(err).__name__}") from None
        bus = cls(client, client.jetstream(), closing, replicas_for(urls))
        if bus.replicas < MOST_REPLICAS and client.discovered_servers:
            log.warning(
                "bus (%s): the NATS server is one of a cluster (it names %d other(s)) but --nats gave %d URL(s): "
                "the streams get %d replica(s); give every server's URL for %d",
                name,
                len(client.discovered_servers),
                len(urls),
                bus.replicas,
                MOST_REPLICAS,
            )
        if streams:
            try:
                await bus._ensure_streams()
            except BaseException:
                await bus.close()
                raise
        return bus

    async def _ensure_streams(self) -> None:
        for prefix, name in STREAMS.items():
            config = StreamConfig(
                name=name,
                subjects=[prefix + "*"],
                storage=StorageType.FILE,
                duplicate_window=DUPLICATE_WINDOW,
                max_age=MAX_AGE,
                num_replicas=self.replicas,
            )
            try:
                try:
                    await self.js.add_stream(config)  # the same configuration again is accepted as is
                except nats.js.errors.BadRequestError:  # there, with an earlier version's settings or replicas
                    there = (await self.js.stream_info(name)).config.num_replicas or 1
                    await self._update(replace(config, num_replicas=max(there, self.replicas)), there)
            except nats.js.errors.APIError as err:  # e.g. replicas asked of a server that is no cluster
                raise BusError(
                    f"the bus refused stream {name} with {self.replicas} replica(s) (one per URL given, at most "
                    f"{MOST_REPLICAS}): {err.description}"
                ) from None

    async def bucket(self, config: KeyValueConfig) -> KeyValue:
        """A key-value bucket, made with this bus's replicas if missing; one already there is used with
        its own settings, its replicas raised to this bus's if it has fewer."""
        try:
            return await self.js.create_key_value(config, replicas=self.replicas)
        except nats.js.errors.BadRequestError:  # there, with other settings
            there = (await self.js.stream_info(f"KV_{config.bucket}")).config
            if (there.num_replicas or 1) < self.replicas:
                await self._update(replace(there, num_replicas=self.replicas), there.num_replicas or 1)
            return await self.js.key_value(config.bucket)

    async def _update(self, config: StreamConfig, replicas_before: int, timeout: float = 10.0) -> None:
        """Update a stream; one given more replicas is waited for until it has a leader again (it has none
        while its new group forms), so that what comes next finds it."""
        await self.js.update_stream(config)
        if config.num_replicas <= replicas_before:
            return
        log.info("stream %s had %d replica(s); now %d", config.name, replicas_before, config.num_replicas)
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            with contextlib.suppress(nats.errors.Error, TimeoutError):
                info = await self.js.stream_info(config.name)
                if info.cluster is not None and info.cluster.leader:
                    return
            await asyncio.sleep(0.05)  # polling the stream, not waiting a fixed time
        raise BusError(f"stream {config.name} had no leader within {timeout:g} s of getting more replicas")

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
        """Close the connection (within CLOSE_SECONDS); every publish was acknowledged by JetStream already,
        so nothing is lost."""
        self.closing.append(True)
        if not self.client.is_closed:
            await _close(self.client)
