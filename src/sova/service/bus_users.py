"""Who may do what on the bus: a NATS user for each agent and one for the managers, each allowed only the
subjects it needs, written as nats-server's ``authorization`` block.

An agent's user speaks only for its hosts (one host; a simulated cluster's agents, one process, have one
user for all of theirs). For host H it may publish its report (``sova.report.H``), its SLO status
(``sova.slo_status.H``), its outcomes and local audit entries (``sova.outcome.H``, ``sova.local.H``, both
through JetStream); read its actions through its own durable consumer (``agent-H`` on SOVA_ACTIONS,
made only in the request form that names the consumer and its filter ``sova.action.H``, so it cannot make
one on another host's actions) and acknowledge them; and read the SLO bucket through the ordered
consumer a watch makes. It may subscribe to its own inbox only (``_INBOX.USER.>``, ``bus.inbox_prefix``):
every reply and consumed message it gets comes there, and no other user's does. It makes no stream and no
bucket: the managers do. The managers' user may do all Sova does: send actions, administer the streams
and buckets (all of ``$JS.API``), acknowledge outcomes and local audit entries, keep the lease and the
SLOs, and listen to every report and SLO status.

Passwords stand in the block in clear (nats-server takes bcrypt hashes too, which would need a bcrypt
library), so the block is written owner-only, as each user's password file is.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from sova.service import lease, slo_relay
from sova.service.bus import (
    ACTIONS,
    LOCAL,
    OUTCOMES,
    BusError,
    action_consumer,
    action_subject,
    host_token,
    inbox_prefix,
    local_subject,
    outcome_subject,
    report_subject,
)

MANAGER = "manager"  # the managers' user name unless told
SLO_STREAM = f"KV_{slo_relay.BUCKET}"  # the stream behind the SLO bucket


@dataclass(frozen=True)
class BusUser:
    """One NATS user: what it may publish and subscribe to (None: anything, for tools and tests)."""

    name: str
    password: str
    publish: tuple[str, ...] | None = None
    subscribe: tuple[str, ...] | None = None

    def entry(self) -> str:
        """Its entry in nats-server's ``users`` list (JSON strings are the configuration's strings)."""
        parts = [f"user: {json.dumps(self.name)}", f"password: {json.dumps(self.password)}"]
        allowed = {"publish": self.publish, "subscribe": self.subscribe}
        rules = [f"{way}: {{ allow: {json.dumps(list(subjects))} }}" for way, subjects in allowed.items() if subjects]
        if rules:
            parts.append(f"permissions: {{ {', '.join(rules)} }}")
        return "{ " + ", ".join(parts) + " }"


def new_password() -> str:
    return secrets.token_hex(16)


def agent_user_name(host: str) -> str:
    return f"agent-{host_token(host)}"


def agent_user(name: str, hosts: list[str], password: str) -> BusUser:
    """The user of the agents of `hosts` (one host's, or a simulated cluster's)."""
    if not hosts:
        raise BusError(f"bus user {name!r}: an agent's user needs at least one host")
    publish = [
        f"$JS.API.STREAM.INFO.{SLO_STREAM}",  # has the SLO bucket changed?
        f"$JS.API.CONSUMER.CREATE.{SLO_STREAM}",  # the ordered consumer of a watch of the bucket
        f"$JS.API.CONSUMER.INFO.{SLO_STREAM}.*",
        f"$JS.FC.{SLO_STREAM}.>",  # its flow control
    ]
    for host in hosts:
        consumer = action_consumer(host)
        publish += [
            report_subject(host),
            slo_relay.status_subject(host),
            outcome_subject(host),
            local_subject(host),
            f"$JS.API.CONSUMER.INFO.{ACTIONS}.{consumer}",
            f"$JS.API.CONSUMER.CREATE.{ACTIONS}.{consumer}.{action_subject(host)}",
            f"$JS.API.CONSUMER.MSG.NEXT.{ACTIONS}.{consumer}",
            f"$JS.ACK.{ACTIONS}.{consumer}.>",
        ]
    return BusUser(_user_token(name), password, tuple(publish), (f"{inbox_prefix(name)}.>",))


def manager_user(name: str, password: str) -> BusUser:
    """The managers' user (a leader and its standbys may share it)."""
    publish = (
        "sova.action.*",
        "$JS.API.>",  # the managers make and update the streams, consumers and buckets
        f"$JS.ACK.{OUTCOMES}.>",
        f"$JS.ACK.{LOCAL}.>",
        "$JS.FC.>",
        f"$KV.{lease.BUCKET}.>",
        f"$KV.{slo_relay.BUCKET}.>",
    )
    subscribe = ("sova.report.*", f"{slo_relay.STATUS}.*", f"{inbox_prefix(name)}.>")
    return BusUser(_user_token(name), password, publish, subscribe)


def authorization_block(users: list[BusUser]) -> str:
    """nats-server's ``authorization`` block for these users (names must differ)."""
    names = [user.name for user in users]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise BusError(f"bus user(s) named twice: {', '.join(twice)}")
    return "authorization {\n  users = [\n" + "".join(f"    {user.entry()}\n" for user in users) + "  ]\n}\n"


def _user_token(name: str) -> str:
    """A user name that is also one subject token, as its inbox (``_INBOX.NAME``) needs."""
    try:
        return host_token(name)
    except BusError:
        raise BusError(
            f"bus user name {name!r}: use letters, digits, '-' and '_' (it names the user's inbox)"
        ) from None


@dataclass(frozen=True)
class BusConfig:
    """What `write_config` wrote: the block's file and each user's password file, by user name."""

    authorization: Path
    password_files: dict[str, Path]
    agent_users: dict[str, str]  # host -> its agent's user name


def write_config(directory: Path, hosts: list[str], manager: str = MANAGER) -> BusConfig:
    """The managers' user and one user per host's agent, each with a password in DIRECTORY/USER.password
    (a file there already is kept, so adding a host changes no other's password), and the block that
    names them all in DIRECTORY/authorization.conf; every file owner-only, each written whole. A bad name
    is refused before anything is written."""
    twice = sorted({host for host in hosts if hosts.count(host) > 1})
    if twice:
        raise BusError(f"host(s) named twice: {', '.join(twice)}")
    names = {host: agent_user_name(host) for host in hosts}
    _user_token(manager)
    if manager in names.values():
        raise BusError(f"the managers' user {manager!r} is also a host's agent's")
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    passwords = {name: _password(directory / f"{name}.password") for name in [manager, *names.values()]}
    users = [manager_user(manager, passwords[manager])]
    users += [agent_user(names[host], [host], passwords[names[host]]) for host in hosts]
    block = authorization_block(users)
    for name, password in passwords.items():
        _write_private(directory / f"{name}.password", password + "\n")
    _write_private(directory / "authorization.conf", f"# sova bus config: {len(users)} users\n{block}")
    return BusConfig(
        directory / "authorization.conf", {name: directory / f"{name}.password" for name in passwords}, names
    )


def _password(path: Path) -> str:
    """The password a file holds (it is kept), or a new one if there is no file."""
    if not path.exists():
        return new_password()
    try:
        password = path.read_text().strip()
    except OSError as err:
        raise BusError(f"{path}: cannot read it: {err.strerror}") from None
    if not password or '"' in password or "\\" in password:
        raise BusError(f"{path}: expected one password (no quotes or backslashes); delete it for a new one")
    return password


def _write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read, atomically (a secret is never seen half-written)."""
    partial = path.with_name(path.name + ".partial")
    with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
        out.write(text)
    partial.replace(path)
