"""Several nats-servers as one JetStream cluster on this machine: for the tests and `sova serve --nats-cluster N`.

Each server has a directory of its own (configuration, log, JetStream store), a client port, a cluster
port with routes to every other server, and a monitoring port on 127.0.0.1. The routes use one user and
password of their own, so a process on this machine cannot join the cluster without it; clients use that
user too, or, given ``users``, each its own with the subjects it may use (bus_users.py), on every server.
`start` returns once every server names the same JetStream meta leader and that leader counts every
other server as a current peer: from then on streams with up to `size` replicas can be made. Streams
and buckets are replicated by the clients that make them (bus.py: one replica per URL given, at most
three), not by the servers.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from sova.service.bus_users import BusUser
from sova.service.natsd import NatsServer, NatsServerError, free_port


@dataclass
class NatsCluster:
    """`size` nats-servers on 127.0.0.1 as the JetStream cluster `name`, under `directory` (n1, n2, ...)."""

    directory: Path
    size: int = 3
    users: tuple[BusUser, ...] = ()  # the clients' users, with their permissions (none: `user` for all)
    name: str = "sova"
    user: str = "sova"
    password: str = field(default_factory=lambda: secrets.token_hex(16))
    with_parent: bool = False  # the servers stop when the thread that started them dies (Linux)
    servers: list[NatsServer] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not 2 <= self.size <= 7:
            raise NatsServerError(f"a NATS cluster of {self.size}: expected 2 to 7 servers (3 or 5 for a quorum)")
        routes = [free_port() for _ in range(self.size)]
        for index, port in enumerate(routes):
            peers = ", ".join(
                f'"nats-route://{self.user}:{self.password}@127.0.0.1:{other}"' for other in routes if other != port
            )
            block = (
                f'cluster {{\n  name: "{self.name}"\n  listen: "127.0.0.1:{port}"\n'
                f'  authorization {{ user: "{self.user}", password: "{self.password}" }}\n'
                f"  routes: [{peers}]\n}}\n"
            )
            server = NatsServer(
                self.directory / f"n{index + 1}",
                monitor_port=free_port(),
                user=self.user,
                password=self.password,
                users=self.users,
                with_parent=self.with_parent,
                server_name=f"{self.name}-{index + 1}",
                cluster=block,
            )
            self.servers.append(server)

    @property
    def urls(self) -> list[str]:
        return [server.url for server in self.servers]

    @property
    def url(self) -> str:
        """Every server's URL, comma-separated: what `--nats` takes."""
        return ",".join(self.urls)

    def start(self, timeout: float = 30.0) -> NatsCluster:
        """Start every server, then wait until the cluster has a JetStream meta leader; on a failure the
        servers started are stopped."""
        try:
            for server in self.servers:
                server.start(timeout)
            self.wait_for_leader(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def meta(self, server: NatsServer) -> dict:
        """The JetStream meta group as `server` sees it (its monitoring endpoint /jsz), or {}."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{server.monitor_port}/jsz", timeout=2) as answer:
                return json.load(answer).get("meta_cluster") or {}
        except (OSError, ValueError):  # not up yet, or shutting down
            return {}

    def wait_for_leader(self, timeout: float = 30.0) -> str:
        """Wait until every running server names the same meta leader and the leader counts every other
        server as a current peer (a stream with `size` replicas can then be placed); its server name."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            running = [s for s in self.servers if s.process is not None and s.process.poll() is None]
            metas = {s.server_name: self.meta(s) for s in running}
            leaders = {meta.get("leader") for meta in metas.values()}
            leader = leaders.pop() if len(leaders) == 1 else None
            if leader in metas:
                peers = metas[leader].get("replicas") or []
                if len(peers) == self.size - 1 and all(p.get("current") and not p.get("offline") for p in peers):
                    return leader
            time.sleep(0.05)  # polling the servers, not waiting a fixed time
        logs = ", ".join(str(s.directory / "nats.log") for s in self.servers)
        raise NatsServerError(f"the NATS cluster had no JetStream leader within {timeout:g} s; see {logs}")

    def stop(self, kill: bool = False) -> None:
        for server in self.servers:
            server.stop(kill=kill)

    def __enter__(self) -> NatsCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
