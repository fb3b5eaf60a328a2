"""`sova serve`: the whole service on this machine, each part a process started and stopped by its PID:
nats-server (or a JetStream cluster of several on loopback, `--nats-cluster`, every part given all their
URLs), the manager (with its API and dashboard) and the agents (a simulated cluster's, or one per lab
host). Everything lives in one directory of its own: the bus's store, the manager's state, the
agents' ledgers, each process's log, the admin token (owner-only) and ``serve.json`` (the PIDs, the URL
and each part's crashes). A part that exits is started again after a back-off (1 s, doubling to a
minute while it keeps failing; a part that ran a minute starts over at 1 s); the stack stops only when
asked.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from sova.service.bus_users import BusUser, agent_user, manager_user, new_password
from sova.service.nats_cluster import NatsCluster
from sova.service.natsd import NatsServer, NatsServerError, stop_with_parent
from sova.service.state import StateStore
from sova.service.tokens import TokenBook


class StackError(RuntimeError):
    """A part of the stack did not come up."""


FIRST_DELAY, MOST_DELAY = 1.0, 60.0  # s before a part that exited starts again: at first, at most
STEADY = 60.0  # s a part runs before its next exit counts as a new fault (the back-off starts over)


@dataclass
class Child:
    name: str
    process: subprocess.Popen
    log: Path
    args: list[str]  # its `sova` command, to start it again
    crashes: int = 0  # exits while the stack ran
    delay: float = 0.0  # s before the latest restart
    restart_at: float | None = None  # when it starts again (it exited)
    started: float = field(default_factory=time.monotonic)


@dataclass
class LocalStack:
    directory: Path
    api: tuple[str, int]
    manager_args: list[str]  # profile, mode, params, rails
    # (name, the `sova agent` arguments, the hosts it speaks for) for each agent process; its name is its bus user's
    agents: list[tuple[str, list[str], list[str]]]
    hosts: int  # how many hosts report once all is up
    nats_cluster: int = 1  # nats-servers: one, or a JetStream cluster of this many
    children: list[Child] = field(default_factory=list)
    nats: NatsServer | NatsCluster | None = None
    nats_crashes: dict[str, int] = field(default_factory=dict)  # by the server's name in serve.json
    token: str = ""
    passwords: dict[str, str] = field(default_factory=dict)  # each part's bus password, by its name

    @property
    def url(self) -> str:
        return f"http://{self.api[0]}:{self.api[1]}"

    def start(self, timeout: float = 60.0) -> None:
        """Bring every part up, in order, each waited for; on a failure what was started is stopped."""
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, timeout: float) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        users = self._bus_users()
        if self.nats_cluster > 1:
            self.nats = NatsCluster(self.directory / "nats", self.nats_cluster, users, with_parent=True).start()
        else:
            self.nats = NatsServer(self.directory / "nats", users=users, with_parent=True).start()
        state = f"sqlite:///{self.directory / 'manager.db'}"
        store = StateStore(state)
        self.token = TokenBook(store).create("admin", "admin", by="sova serve")
        store.close()
        _write_private(self.directory / "admin.token", self.token + "\n")
        api = f"{self.api[0]}:{self.api[1]}"
        runs = ["--runs", str(self.directory / "runs")]
        manager = ["manager", *self._bus("manager"), "--state", state, "--api", api, *runs, *self.manager_args]
        self._spawn("manager", manager)
        self._wait(lambda health: True, timeout, "the manager's API")
        for name, args, _ in self.agents:
            self._spawn(name, ["agent", *self._bus(name), *args])
        self._wait(lambda health: health["hosts_reporting"] >= self.hosts, timeout, f"{self.hosts} host report(s)")
        self._write_record()

    def _bus_users(self) -> tuple[BusUser, ...]:
        """The manager's bus user and each agent process's, allowed only its hosts' subjects (bus_users.py)."""
        self.passwords = {name: new_password() for name in ["manager", *(name for name, _, _ in self.agents)]}
        users = [manager_user("manager", self.passwords["manager"])]
        users += [agent_user(name, hosts, self.passwords[name]) for name, _, hosts in self.agents]
        return tuple(users)

    def _bus(self, name: str) -> list[str]:
        return ["--nats", self.nats.url, "--nats-user", name]

    def _spawn(self, name: str, args: list[str]) -> None:
        log = self.directory / f"{name}.log"
        self.children.append(Child(name, self._launch(name, args, log), log, args))

    def _launch(self, name: str, args: list[str], log: Path) -> subprocess.Popen:
        env = {**os.environ, "SOVA_NATS_PASSWORD": self.passwords[name], "PYTHONUNBUFFERED": "1"}
        with log.open("ab") as out:
            return subprocess.Popen(
                [sys.executable, "-m", "sova.cli", *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # Ctrl-C reaches `sova serve` alone, which stops the parts in order
                preexec_fn=stop_with_parent,  # and a `sova serve` killed by SIGKILL takes them with it
            )

    def _wait(self, ready, timeout: float, what: str) -> None:
        """Poll /healthz until `ready(health)` holds; a child that exits meanwhile is an error naming its log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for child in self.children:
                if child.process.poll() is not None:
                    raise StackError(f"{child.name} exited ({child.process.returncode}); see {child.log}")
            try:
                health = httpx.get(f"{self.url}/healthz", timeout=2).json()
                if ready(health):
                    return
            except (httpx.HTTPError, ValueError):
                pass  # not listening yet
            time.sleep(0.1)  # polling a condition, not waiting a fixed time
        raise StackError(f"no {what} within {timeout:g} s; see the logs in {self.directory}")

    def nats_servers(self) -> dict[str, NatsServer]:
        """Each nats-server by its name in serve.json: `nats-server`, or `nats-server-1` ... of a cluster."""
        if isinstance(self.nats, NatsCluster):
            return {f"nats-server-{index}": server for index, server in enumerate(self.nats.servers, 1)}
        return {"nats-server": self.nats} if self.nats is not None else {}

    def _write_record(self) -> None:
        servers = self.nats_servers()
        record = {
            "url": self.url,
            "nats": self.nats.url,  # as --nats takes it: a cluster's URLs separated by commas
            "pids": {name: s.process.pid for name, s in servers.items()}
            | {c.name: c.process.pid for c in self.children},
            "crashes": {name: self.nats_crashes.get(name, 0) for name in servers}
            | {c.name: c.crashes for c in self.children},
            "token_file": str(self.directory / "admin.token"),
        }
        _write_private(self.directory / "serve.json", json.dumps(record, indent=2) + "\n")

    def supervise(self) -> list[str]:
        """Start again, after its back-off, each part that exited; what happened, as lines for a person."""
        said = []
        now = time.monotonic()
        for child in self.children:
            code = child.process.poll()
            if code is not None and child.restart_at is None:
                child.crashes += 1
                steady = now - child.started > STEADY or child.delay == 0.0  # ran a while, or its first exit
                child.delay = FIRST_DELAY if steady else min(2 * child.delay, MOST_DELAY)
                child.restart_at = now + child.delay
                said.append(
                    f"{child.name} exited ({code}; crash {child.crashes}); starting it again in {child.delay:g} s"
                )
            elif child.restart_at is not None and now >= child.restart_at:
                child.process = self._launch(child.name, child.args, child.log)
                child.restart_at, child.started = None, now
                said.append(f"{child.name} started again (pid {child.process.pid}); see {child.log}")
        for name, server in self.nats_servers().items():
            if server.process.poll() is None:
                continue
            crashes = self.nats_crashes[name] = self.nats_crashes.get(name, 0) + 1
            try:  # the same ports and store: the parts reconnect by themselves; a cluster's member catches up
                server.start()
                said.append(f"{name} exited (crash {crashes}); started it again")
            except NatsServerError as err:  # tried again at the next watch
                said.append(f"{name} exited (crash {crashes}) and did not start again: {err}")
        if said:
            self._write_record()
        return said

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the agents, then the manager, then nats-server: SIGTERM, SIGKILL after `timeout`. A second
        Ctrl-C meanwhile is ignored: leaving now would leave the parts running with no one to stop them."""
        previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in (signal.SIGINT, signal.SIGTERM)}
        try:
            self._stop_children(timeout)
            if self.nats is not None:
                self.nats.stop()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _stop_children(self, timeout: float) -> None:
        for child in reversed(self.children):
            if child.process.poll() is None:
                child.process.send_signal(signal.SIGTERM)
                try:
                    child.process.wait(timeout)
                except subprocess.TimeoutExpired:
                    child.process.kill()
                    child.process.wait(timeout)


def _write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read, atomically (a secret is never seen half-written)."""
    partial = path.with_name(path.name + ".partial")
    with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
        out.write(text)
    partial.replace(path)
