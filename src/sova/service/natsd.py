"""A nats-server with JetStream, started and stopped by PID: for the tests and `sova serve`.

Its configuration and JetStream store live in a directory of its own; clients authenticate with a user
and password written there (or, given ``users``, each with its own and the subjects it may use). A restart
on the same directory keeps what JetStream stored.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from sova.service.bus_users import BusUser, authorization_block


class NatsServerError(RuntimeError):
    """nats-server is missing, or did not start or stop."""


def binary() -> str | None:
    """nats-server's path (Debian puts it in /usr/sbin, which a user's PATH may not hold), or None."""
    return shutil.which("nats-server") or shutil.which("nats-server", path="/usr/sbin:/usr/local/sbin")


def stop_with_parent() -> None:
    """In a child before it runs (Popen's preexec_fn): SIGTERM to it when the thread that forked it dies,
    so a `sova serve` killed by SIGKILL leaves no bus or daemon behind (Linux's PR_SET_PDEATHSIG)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class NatsServer:
    """One nats-server (on 127.0.0.1 unless told) with JetStream stored under `directory`."""

    directory: Path
    port: int = field(default_factory=free_port)
    host: str = "127.0.0.1"  # where it listens
    monitor_port: int | None = None  # nats-server's HTTP monitoring (/varz ...) on 127.0.0.1, if given
    tls: tuple[Path, Path] | None = None  # the server's certificate and key: clients must then use TLS
    client_ca: Path | None = None  # with tls: clients must show a certificate this CA signed (mutual TLS)
    user: str = "sova"
    password: str = field(default_factory=lambda: secrets.token_hex(16))
    users: tuple[BusUser, ...] = ()  # each with its permissions; when given, the only users (not `user`)
    process: subprocess.Popen | None = None
    with_parent: bool = False  # it stops when the thread that started it dies, even by SIGKILL (Linux)
    server_name: str | None = None  # unique among a cluster's servers
    cluster: str = ""  # its `cluster { ... }` block, when it is one of a cluster's servers (nats_cluster.py)

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def start(self, timeout: float = 20.0) -> NatsServer:
        path = binary()
        if path is None:
            raise NatsServerError("nats-server is not installed (Debian: apt-get install nats-server)")
        self.directory.mkdir(parents=True, exist_ok=True)
        config = self.directory / "nats.conf"
        text = (
            f'listen: "{self.host}:{self.port}"\n'
            f'jetstream {{ store_dir: "{self.directory / "jetstream"}" }}\n'
            f"{self._authorization()}"
        )
        if self.tls is not None:
            verify = f', ca_file: "{self.client_ca}", verify: true' if self.client_ca is not None else ""
            text += f'tls {{ cert_file: "{self.tls[0]}", key_file: "{self.tls[1]}"{verify} }}\n'
        if self.monitor_port is not None:
            text += f'http: "127.0.0.1:{self.monitor_port}"\n'
        if self.server_name is not None:
            text += f'server_name: "{self.server_name}"\n'
        text += self.cluster
        # owner-only from its creation: it holds the password
        with os.fdopen(os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            out.write(text)
        with (self.directory / "nats.log").open("ab") as log:
            # a session of its own: a Ctrl-C meant for its starter does not stop the bus under the others
            self.process = subprocess.Popen(
                [path, "-c", str(config)],
                stdout=log,
                stderr=log,
                start_new_session=True,
                preexec_fn=stop_with_parent if self.with_parent else None,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise NatsServerError(
                    f"nats-server exited ({self.process.returncode}); see {self.directory / 'nats.log'}"
                )
            with contextlib.suppress(OSError), socket.create_connection((self.host, self.port), timeout=0.5):
                return self
            time.sleep(0.05)  # polling for the port, not waiting a fixed time
        self.stop()
        raise NatsServerError(f"nats-server did not listen on {self.port} within {timeout:g} s")

    def _authorization(self) -> str:
        if self.users:
            return authorization_block(list(self.users))
        return f'authorization {{ user: "{self.user}", password: "{self.password}" }}\n'

    def stop(self, kill: bool = False, timeout: float = 10.0) -> None:
        """Stop it (SIGTERM, or SIGKILL with `kill`: a crash) and wait until its process is gone."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout)

    def __enter__(self) -> NatsServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
