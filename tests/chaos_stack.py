"""The service as real processes, for fault injection: nats-server (or a JetStream cluster of several),
PostgreSQL, two managers (a leader and a standby on the same PostgreSQL), and a simulated cluster's agents
in a network namespace of their own, joined to this one by a veth pair, so that the test can cut them off
the bus (or, with `namespace=False`, beside the rest on loopback: no root needed).

``verdict()`` compares what the managers recorded (the state store) with what the agents did (their
ledgers): an action is *lost* if it was sent and no outcome ever came back, or belongs to a plan still
ongoing when everything has settled; *doubled* if the agents applied one of the plan's actions more
than once (two ids for one action, or one id applied twice); *mismatched* if the manager recorded another
outcome than the agent's.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import sqlalchemy as sa

from helpers import ROOT
from postgres_server import PostgresServer
from sova.service.nats_cluster import NatsCluster
from sova.service.natsd import NatsServer, free_port
from sova.service.state import StateStore
from sova.service.tokens import TokenBook

SCENARIO = ROOT / "scenarios" / "service" / "moving-hotspots.toml"
LEASE_TTL = 3.0
STALE_AFTER = 5.0


@dataclass
class Verdict:
    sent: int
    answered: int
    lost: int
    doubled: int
    mismatched: int
    ongoing: int  # plans not yet ended


def run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


class ChaosStack:
    def __init__(self, directory: Path, speed: float = 8.0, bus_size: int = 1, namespace: bool = True):
        """bus_size: nats-servers (more than one: a JetStream cluster on loopback, `nats-1` ... to kill)."""
        self.directory, self.speed, self.bus_size, self.namespace = directory, speed, bus_size, namespace
        tag = f"{os.getpid() % 10000}"
        self.netns, self.veth_out, self.veth_in = f"sova-chaos-{tag}", f"sovac{tag}o", f"sovac{tag}i"
        subnet = 1 + os.getpid() % 250
        self.bus_ip, self.agent_ip = f"10.231.{subnet}.1", f"10.231.{subnet}.2"
        if not namespace:
            self.bus_ip = self.agent_ip = "127.0.0.1"
        self.procs: dict[str, subprocess.Popen] = {}
        self.ports = {"m1": free_port(), "m2": free_port()}
        self.nats: NatsServer | NatsCluster | None = None
        self.pg: PostgresServer | None = None
        self.state = ""

    # ------------------------------------------------------------------ bring-up
    def start(self) -> None:
        if self.namespace:
            self._network()
        if self.bus_size > 1:
            assert not self.namespace, "a cluster listens on loopback: give namespace=False"
            self.nats = NatsCluster(self.directory / "nats", self.bus_size).start()
        else:
            self.nats = NatsServer(self.directory / "nats", host=self.bus_ip).start()
        # under /tmp itself: the server runs as the postgres user, who cannot enter pytest's root-only dirs
        self.pg = PostgresServer(Path(tempfile.mkdtemp(prefix="sova-pg-"))).start()
        self.state = self.pg.url
        store = StateStore(self.state)
        self.token = TokenBook(store).create("chaos", "viewer")
        store.close()
        self.start_manager("m1")
        self.wait(lambda: self.health("m1").get("leader"), "m1 to lead")
        self.start_manager("m2")
        self.start_agents()
        self.wait(lambda: self.health("m1").get("hosts_reporting") == 4, "4 hosts reporting")

    def _network(self) -> None:
        run("ip", "netns", "add", self.netns)
        run("ip", "link", "add", self.veth_out, "type", "veth", "peer", "name", self.veth_in, "netns", self.netns)
        run("ip", "addr", "add", f"{self.bus_ip}/30", "dev", self.veth_out)
        run("ip", "link", "set", self.veth_out, "up")
        run("ip", "-n", self.netns, "addr", "add", f"{self.agent_ip}/30", "dev", self.veth_in)
        run("ip", "-n", self.netns, "link", "set", self.veth_in, "up")
        run("ip", "-n", self.netns, "link", "set", "lo", "up")

    def _spawn(self, name: str, args: list[str], netns: str | None = None) -> None:
        prefix = ["ip", "netns", "exec", netns] if netns else []
        env = {**os.environ, "SOVA_NATS_PASSWORD": self.nats.password, "PYTHONUNBUFFERED": "1"}
        with (self.directory / f"{name}.log").open("ab") as log:
            self.procs[name] = subprocess.Popen(
                [*prefix, sys.executable, "-m", "sova.cli", *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )

    def bus_args(self) -> list[str]:
        return ["--nats", self.nats.url, "--nats-user", self.nats.user]

    def start_manager(self, name: str) -> None:
        args = ["manager", *self.bus_args(), "--state", self.state, "--api", f"127.0.0.1:{self.ports[name]}"]
        args += ["--scenario", str(SCENARIO), "--profile", "threshold", "--name", name]
        args += ["--lease-ttl", str(LEASE_TTL), "--stale-after", str(STALE_AFTER)]
        args += ["--control", "hold_down=20"]  # more migrations, so that faults find one under way
        self._spawn(name, args)

    def start_agents(self) -> None:
        args = ["agent", *self.bus_args(), "--sim", str(SCENARIO), "--speed", str(self.speed)]
        netns = self.netns if self.namespace else None
        self._spawn("agents", [*args, "--ledger", str(self.directory / "ledgers")], netns=netns)

    # ------------------------------------------------------------------ faults
    def kill(self, name: str) -> None:
        """SIGKILL a part: a crash, with no chance to tidy up."""
        if name.startswith("nats"):
            self._nats_server(name).stop(kill=True)
        elif name == "postgres":
            self.pg.crash()
        else:
            self.procs[name].kill()
            self.procs[name].wait(30)

    def restart(self, name: str) -> None:
        if name.startswith("nats"):
            self._nats_server(name).start()
        elif name == "postgres":
            self.pg.start()
        elif name == "agents":
            self.start_agents()
        else:
            self.start_manager(name)

    def _nats_server(self, name: str) -> NatsServer:
        """`nats`: the one server; `nats-N`: the cluster's Nth."""
        return self.nats if name == "nats" else self.nats.servers[int(name.removeprefix("nats-")) - 1]

    def partition(self, cut: bool) -> None:
        """Cut the agents' namespace off the bus (its link down), or join it again."""
        run("ip", "-n", self.netns, "link", "set", self.veth_in, "down" if cut else "up")

    # ------------------------------------------------------------------ looking
    def health(self, name: str) -> dict:
        try:
            return httpx.get(f"http://127.0.0.1:{self.ports[name]}/healthz", timeout=2).json()
        except (httpx.HTTPError, ValueError):
            return {}

    def reported_since(self, name: str, since: float) -> int:
        """How many hosts manager `name` took a report from at or after `since` (a Unix time), from its
        /metrics (0 while it cannot tell: down, or its store away)."""
        headers = {"Authorization": f"Bearer {self.token}"}
        try:
            response = httpx.get(f"http://127.0.0.1:{self.ports[name]}/metrics", headers=headers, timeout=2)
        except httpx.HTTPError:
            return 0
        if response.status_code != 200:
            return 0
        prefix = "sova_host_last_report_timestamp_seconds{"
        times = [float(line.rsplit(" ", 1)[1]) for line in response.text.splitlines() if line.startswith(prefix)]
        return sum(1 for at in times if at >= since)

    def leader(self) -> str | None:
        return next((m for m in ("m1", "m2") if self.health(m).get("leader")), None)

    def wait(self, condition, what: str, timeout: float = 120.0) -> float:
        """Poll until `condition()` holds; the seconds it took."""
        began = time.monotonic()
        while not condition():
            if time.monotonic() - began > timeout:
                raise AssertionError(f"waited {timeout:g} s for {what}; logs in {self.directory}")
            time.sleep(0.1)
        return time.monotonic() - began

    def in_flight(self, sent_before: float | None = None) -> set[str] | None:
        """The ids of the actions sent (before `sent_before`, a Unix time, if given) and not yet answered,
        as the state store says; None while it cannot be read (PostgreSQL down)."""
        query = "SELECT id FROM actions WHERE status IS NULL AND host <> '' AND sent_at <= :before"
        engine = sa.create_engine(self.state)
        try:
            with engine.connect() as connection:
                before = {"before": sent_before if sent_before is not None else float("inf")}
                return set(connection.execute(sa.text(query), before).scalars())
        except sa.exc.SQLAlchemyError:
            return None
        finally:
            engine.dispose()

    def verdict(self, sent_before: float) -> Verdict:
        """The managers' record against the agents' ledgers, over the actions sent before `sent_before`
        (a Unix time; the managers go on planning meanwhile, and what they send later may be under way)."""
        engine = sa.create_engine(self.state)
        with engine.connect() as connection:
            query = "SELECT id, status, outcome FROM actions WHERE host <> '' AND sent_at <= :before"
            sent = connection.execute(sa.text(query), {"before": sent_before}).all()
            query = (  # plans waiting on an action sent before then
                "SELECT count(*) FROM plans WHERE state = 'ongoing' AND id IN"
                " (SELECT plan FROM actions WHERE sent_at <= :before AND status IS NULL)"
            )
            ongoing = connection.execute(sa.text(query), {"before": sent_before}).scalar()
        engine.dispose()
        applied: dict[str, tuple[str, bytes | None]] = {}
        doubled = 0
        for ledger in sorted((self.directory / "ledgers").glob("*.db")):
            with contextlib.closing(sqlite3.connect(ledger)) as db:
                for action_id, state, outcome in db.execute("SELECT id, state, outcome FROM actions"):
                    doubled += action_id in applied  # one id applied on two hosts
                    applied[action_id] = (state, outcome)
        plan_actions = {}
        for action_id, _, _ in sent:  # ids are NONCE-PLAN-INDEX: one per action of a plan
            _, plan, index = action_id.rsplit("-", 2)
            doubled += (plan, index) in plan_actions
            plan_actions[(plan, index)] = action_id
        lost = sum(1 for _, status, _ in sent if status is None)
        mismatched = 0
        for action_id, status, _ in sent:
            if status is not None and action_id in applied and applied[action_id][1] is not None:
                mismatched += json.loads(applied[action_id][1])["status"] != status
        answered = sum(1 for _, status, _ in sent if status is not None)
        return Verdict(len(sent), answered, lost, doubled, mismatched, ongoing)

    def plans_by_state(self, sent_before: float, action_ids: set[str] | None = None) -> dict[str, int]:
        """How many plans are in each state, of those with an action sent before `sent_before` (a Unix
        time), or only of those holding one of `action_ids` if given."""
        query = "SELECT p.state, count(DISTINCT p.id) FROM plans p JOIN actions a ON a.plan = p.id"
        query += " WHERE a.sent_at <= :before AND a.host <> ''"
        engine = sa.create_engine(self.state)
        try:
            with engine.connect() as connection:
                if action_ids is not None:
                    statement = sa.text(query + " AND a.id IN :ids GROUP BY p.state")
                    statement = statement.bindparams(sa.bindparam("ids", expanding=True))
                    rows = connection.execute(statement, {"before": sent_before, "ids": sorted(action_ids)})
                else:
                    rows = connection.execute(sa.text(query + " GROUP BY p.state"), {"before": sent_before})
                return dict(sorted(rows.all()))
        finally:
            engine.dispose()

    def plan_actions(self, sent_before: float) -> dict[str, int]:
        """The actions of the plans with an action sent before `sent_before` (a Unix time), counted by
        whether they went to an agent and their status ("sent ok", "not sent rejected", ...), and for
        those never sent, by the reason their outcome gives ("not sent: REASON")."""
        query = (
            "SELECT host, status, outcome FROM actions WHERE plan IN"
            " (SELECT plan FROM actions WHERE sent_at <= :before AND host <> '')"
        )
        engine = sa.create_engine(self.state)
        try:
            with engine.connect() as connection:
                rows = connection.execute(sa.text(query), {"before": sent_before}).all()
        finally:
            engine.dispose()
        counts: dict[str, int] = {}
        for host, status, outcome in rows:
            keys = [f"{'sent' if host else 'not sent'} {status or 'unanswered'}"]
            if not host and outcome:
                keys.append(f"not sent: {json.loads(outcome).get('message', '')[:80]}")
            for key in keys:
                counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items()))

    # ------------------------------------------------------------------ tear-down
    def stop(self) -> None:
        for name in ("agents", "m2", "m1"):
            process = self.procs.get(name)
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(10)
        if self.nats is not None:
            self.nats.stop()
        if self.pg is not None:
            self.pg.stop()
            self.pg.remove()
        if self.namespace:
            subprocess.run(["ip", "netns", "del", self.netns], capture_output=True)
            subprocess.run(["ip", "link", "del", self.veth_out], capture_output=True)
