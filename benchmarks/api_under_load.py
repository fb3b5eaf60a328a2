"""The manager's API under load: is /healthz still quick while the API is hammered and sent huge bodies?

Real processes on this machine: nats-server, `sova manager` (threshold profile, auto mode, SQLite state,
its API on a free port) and `sova agent --sim scenarios/service/moving-hotspots.toml` (four simulated hosts
whose hotspots keep the manager planning). Once every host reports, a probe asks /healthz every 10 ms
alone for `--baseline` s; then, for `--seconds` s, at once and each from processes of their own:

- `--clients` concurrent clients (httpx async, one keep-alive connection each) GET `--path` with a
  viewer's token, as fast as the answers come;
- 100 MB bodies PUT to /api/v1/slos/web1, every few seconds: with a Content-Length and with a chunked
  body (no length), each without a token and with an admin's (service/request_limits.py refuses a
  length over its bound, or a call without a token, before reading the body; a chunked body with a token
  is read up to the bound). Raw sockets: the client reads the answer while it still sends, and the time
  is from the request's first byte to the answer's status line;
- the probe goes on starting a /healthz call every 10 ms, answered or not (raw keep-alive connections,
  a new one when none is idle; 5 s timeout); a second probe does the same on the manager's health
  listener (`sova manager --health`, service/health_server.py), which threads answer off the API's loop.

Reported: /healthz latency p50/p99/max on each port (alone, and under load), the big bodies' status and time, the GETs'
answers per second and latency, the manager's CPU share; and the run's conditions (run_conditions.py).
Usage:

    python benchmarks/api_under_load.py [--clients 200] [--seconds 30] [--json api.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import httpx

from run_conditions import RunConditions, cpu_seconds, rss_mib
from service_processes import py_spy, spawn, stop, wait_reporting
from sova.service.natsd import NatsServer, free_port
from sova.service.state import StateStore
from sova.service.tokens import TokenBook

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "service" / "moving-hotspots.toml"
BIG = 100 << 20  # bytes in a big body
PROBE_PERIOD = 0.010  # s between /healthz probes
PROBE_OPENED = 20  # the probe's connections opened before it starts (more open as needed)
SLO_PATH = "/api/v1/slos/web1"


# ---------------------------------------------------------------------- the parts, each in a process
def probe(url: str, start_at: float, seconds: float) -> list[tuple[float, float, int, float]]:
    """(time since start, latency s, status: 0 for no answer, s it started late) of /healthz calls started every PROBE_PERIOD
    whether or not the earlier ones were answered (as a load balancer's checks come: a slow answer does
    not delay the next probe, so slow spells are sampled as often as quick ones)."""
    return asyncio.run(_probe(url, start_at, seconds))


async def _probe(url: str, start_at: float, seconds: float) -> list[tuple[float, float, int, float]]:
    host, port = httpx.URL(url).host, httpx.URL(url).port
    request = f"GET /healthz HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    samples = []
    errors: Counter[str] = Counter()

    async def one(at: float) -> None:
        """One probe on a raw keep-alive connection (an idle one, else a new one): little work on this
        side, so the time is the manager's; how late it started is kept, to tell this side's delays."""
        began = time.perf_counter()
        late = time.time() - at
        status, writer = 0, None
        try:
            while idle and (idle[-1][0].at_eof() or idle[-1][1].is_closing()):
                idle.pop()[1].close()  # closed by the server after its keep-alive timeout (5 s idle)
            reader, writer = idle.pop() if idle else await asyncio.open_connection(host, port)
            writer.write(request)
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5.0)
            status = int(head.split(b" ", 2)[1])
            lines = head.lower().split(b"\r\n")
            length = next(int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length:"))
            await asyncio.wait_for(reader.readexactly(length), 5.0)
            idle.append((reader, writer))
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError, StopIteration) as err:
            status = 0  # no answer (or not one to read): the connection is dropped
            errors[type(err).__name__] += 1
            if writer is not None:
                writer.close()
        samples.append((at - start_at, time.perf_counter() - began, status, late))

    await asyncio.gather(*(one(time.time()) for _ in range(PROBE_OPENED)))
    samples.clear()
    await asyncio.sleep(max(0.0, start_at - time.time()))
    probes = []
    due = start_at
    while due < start_at + seconds:
        probes.append(asyncio.create_task(one(due)))
        due += PROBE_PERIOD
        await asyncio.sleep(max(0.0, due - time.time()))
    await asyncio.gather(*probes)
    for _, writer in idle:
        writer.close()
    if errors:
        print(f"probe errors: {dict(errors)}", flush=True)
    return sorted(samples)


def hammer(url: str, token: str, path: str, clients: int, start_at: float, seconds: float) -> dict:
    """`clients` keep-alive clients GETting `path` until the end; answers by status and their latencies
    (those that ended within the window)."""
    return asyncio.run(_hammer(url, token, path, clients, start_at, seconds))


async def _hammer(url: str, token: str, path: str, clients: int, start_at: float, seconds: float) -> dict:
    statuses: Counter[str] = Counter()
    latencies: list[float] = []
    end = start_at + seconds

    async def client() -> None:
        headers = {"Authorization": f"Bearer {token}"}
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=30.0) as http:
            await asyncio.sleep(max(0.0, start_at - time.time()))
            while time.time() < end:
                began = time.perf_counter()
                try:
                    status = str((await http.get(path)).status_code)
                except httpx.HTTPError as err:
                    status = type(err).__name__
                if time.time() <= end:
                    statuses[status] += 1
                    latencies.append(time.perf_counter() - began)

    await asyncio.gather(*(client() for _ in range(clients)))
    return {"statuses": dict(statuses), "latencies": latencies}


def big_bodies(url: str, token: str, start_at: float, seconds: float, every: float) -> list[dict]:
    """The four kinds of 100 MB PUT (length or chunked, without or with a token), all at once, every
    `every` s from 2 s into the window; one row per call."""
    return asyncio.run(_big_bodies(url, token, start_at, seconds, every))


async def _big_bodies(url: str, token: str, start_at: float, seconds: float, every: float) -> list[dict]:
    host, port = httpx.URL(url).host, httpx.URL(url).port
    rows = []
    at = start_at + 2.0
    while at < start_at + seconds - 5.0 and math.isfinite(every):
        await asyncio.sleep(max(0.0, at - time.time()))
        kinds = [(chunked, secret) for chunked in (False, True) for secret in (None, token)]
        rows += await asyncio.gather(*(_send_big(host, port, chunked, secret) for chunked, secret in kinds))
        at += every
    return rows


async def _send_big(host: str, port: int, chunked: bool, token: str | None) -> dict:
    """PUT a 100 MB body on a raw connection, reading the answer while sending; its status and time."""
    reader, writer = await asyncio.open_connection(host, port)
    head = f"PUT {SLO_PATH} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
    head += f"Authorization: Bearer {token}\r\n" if token else ""
    head += "Transfer-Encoding: chunked\r\n\r\n" if chunked else f"Content-Length: {BIG}\r\n\r\n"
    sent = 0
    began = time.perf_counter()

    async def pump() -> None:
        nonlocal sent
        writer.write(head.encode())
        piece = b" " * (256 << 10)
        while sent < BIG:
            writer.write(b"%x\r\n%b\r\n" % (len(piece), piece) if chunked else piece)
            await writer.drain()
            sent += len(piece)
        if chunked:
            writer.write(b"0\r\n\r\n")
            await writer.drain()

    pumping = asyncio.create_task(pump())
    try:
        line = await asyncio.wait_for(reader.readline(), 120)
        seconds = time.perf_counter() - began
        status = int(line.split()[1]) if line else 0
    except (TimeoutError, ConnectionError, IndexError, ValueError):
        seconds, status = time.perf_counter() - began, 0
    sent_then = sent
    pumping.cancel()
    with contextlib.suppress(asyncio.CancelledError, ConnectionError):
        await pumping
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()
    kind = f"{'chunked' if chunked else 'Content-Length'}, {'token' if token else 'no token'}"
    return {"kind": kind, "status": status, "seconds": seconds, "mib_written": sent_then / (1 << 20)}


def at_priority(nice: int, work, *args):
    """`work(*args)` in this process at scheduling priority `nice` (absolute: pool processes are reused)."""
    os.setpriority(os.PRIO_PROCESS, 0, nice)
    return work(*args)


def _sleep_until(moment: float) -> None:
    delay = moment - time.time()
    if delay > 0:
        time.sleep(delay)


# ---------------------------------------------------------------------- the stack
class ManagedStack:
    """nats-server, `sova manager` and `sova agent --sim` as processes, with tokens for the API."""

    def __init__(self, workdir: Path, manager_nice: int = 0):
        self.workdir = workdir
        self.nats = NatsServer(workdir / "nats").start()
        state = f"sqlite:///{workdir / 'manager.db'}"
        store = StateStore(state)
        book = TokenBook(store)
        self.viewer, self.admin = book.create("bench", "viewer"), book.create("bench-admin", "admin")
        store.close()
        self.port, health = free_port(), free_port()
        self.url, self.health_url = f"http://127.0.0.1:{self.port}", f"http://127.0.0.1:{health}"
        env = {**os.environ, "SOVA_NATS_PASSWORD": self.nats.password}
        sova = [sys.executable, "-m", "sova.cli"]
        bus = ["--nats", self.nats.url, "--nats-user", self.nats.user]
        manager = [*sova, "manager", *bus, "--state", state, "--api", f"127.0.0.1:{self.port}"]
        manager += ["--health", f"127.0.0.1:{health}"]
        manager += ["--scenario", str(SCENARIO), "--profile", "threshold", "--runs", str(workdir / "runs")]
        agents = [*sova, "agent", *bus, "--sim", str(SCENARIO), "--ledger", str(workdir / "ledgers")]
        self.processes = {
            "manager": spawn(manager, env, workdir / "manager.log", manager_nice),
            "agents": spawn(agents, env, workdir / "agents.log"),
        }

    def wait_reporting(self, hosts: int, timeout: float = 120.0) -> None:
        wait_reporting(self.url, hosts, self.processes, self.workdir, timeout)

    def stop(self) -> None:
        stop(self.processes)
        self.nats.stop()


# ---------------------------------------------------------------------- figures
def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency_row(samples: list[tuple[float, float, int, float]]) -> dict:
    latencies = [latency for _, latency, _, _ in samples]
    return {
        "probes": len(samples),
        "failed": sum(1 for _, _, status, _ in samples if status != 200),
        "p50_ms": 1000 * percentile(latencies, 0.50),
        "p99_ms": 1000 * percentile(latencies, 0.99),
        "max_ms": 1000 * max(latencies, default=float("nan")),
        "over_100ms": sum(1 for latency in latencies if latency > 0.1),
        "started_late_p99_ms": 1000 * percentile([late for *_, late in samples], 0.99),
        "slow": [(round(at, 3), round(latency, 3)) for at, latency, _, _ in samples if latency > 0.1],
    }


def run(args: argparse.Namespace, workdir: Path) -> dict:
    conditions = RunConditions(every=2.0).start()
    stack = ManagedStack(workdir, args.manager_nice)
    near, far = args.manager_nice, args.client_nice  # the probe's priority is the manager's
    try:
        stack.wait_reporting(4)
        manager = stack.processes["manager"].pid
        ports = {"API": stack.url, "health listener": stack.health_url}
        with ProcessPoolExecutor(max_workers=3 + args.processes, mp_context=get_context("spawn")) as pool:
            first = time.time() + 3.0
            alone = {
                port: pool.submit(at_priority, near, probe, url, first, args.baseline) for port, url in ports.items()
            }
            baseline = {port: future.result() for port, future in alone.items()}
            start_at = time.time() + 5.0  # every process started and connected by then
            probing = {
                port: pool.submit(at_priority, near, probe, url, start_at, args.seconds) for port, url in ports.items()
            }
            share = _shares(args.clients, args.processes)
            hammers = [
                pool.submit(at_priority, far, hammer, stack.url, stack.viewer, args.path, n, start_at, args.seconds)
                for n in share
                if n
            ]
            every = args.body_every if args.body_every > 0 else math.inf
            bodies = pool.submit(at_priority, far, big_bodies, stack.url, stack.admin, start_at, args.seconds, every)
            _sleep_until(start_at)
            profiler = py_spy(manager, args.seconds, args.py_spy)
            cpu0, t0 = cpu_seconds(manager), time.monotonic()
            _sleep_until(start_at + args.seconds)
            cpu1, t1 = cpu_seconds(manager), time.monotonic()
            rss = rss_mib(manager)
            loaded, body_rows = {port: future.result() for port, future in probing.items()}, bodies.result()
            gets = [h.result() for h in hammers]
            if profiler is not None:
                profiler.wait(60)
    finally:
        stack.stop()
        conditions.stop()
    statuses: Counter[str] = Counter()
    latencies: list[float] = []
    for part in gets:
        statuses.update(part["statuses"])
        latencies += part["latencies"]
    return {
        "healthz": {
            port: {"alone": latency_row(baseline[port]), "loaded": latency_row(loaded[port])} for port in baseline
        },
        "gets": {
            "clients": args.clients,
            "path": args.path,
            "statuses": dict(statuses),
            "per_s": sum(statuses.values()) / args.seconds,
            "p50_ms": 1000 * percentile(latencies, 0.50),
            "p99_ms": 1000 * percentile(latencies, 0.99),
        },
        "bodies": body_rows,
        "manager_cpu_share": (cpu1 - cpu0) / (t1 - t0),
        "manager_rss_mib": rss,
        "conditions": conditions.summary(),
        "condition_line": conditions.line(),
    }


def _shares(clients: int, processes: int) -> list[int]:
    return [clients // processes + (i < clients % processes) for i in range(processes)]


def report(result: dict) -> None:
    print("\n| /healthz on | | probes | p50 (ms) | p99 (ms) | max (ms) | over 100 ms | failed | probe late p99 (ms) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for port, rows in result["healthz"].items():
        for name, r in rows.items():
            print(
                f"| {port} | {name} | {r['probes']} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['max_ms']:.1f} | "
                f"{r['over_100ms']} | {r['failed']} | {r['started_late_p99_ms']:.1f} |"
            )
    gets = result["gets"]
    print(
        f"\n{gets['clients']} clients GET {gets['path']}: {gets['per_s']:.0f} answers/s, p50 {gets['p50_ms']:.0f} ms, "
        f"p99 {gets['p99_ms']:.0f} ms; statuses {gets['statuses']}"
    )
    print("\n| 100 MB PUT | calls | status | answered after (ms), median [max] | MiB written by then, max |")
    print("|---|---|---|---|---|")
    for kind in dict.fromkeys(row["kind"] for row in result["bodies"]):
        rows = [row for row in result["bodies"] if row["kind"] == kind]
        times = sorted(1000 * row["seconds"] for row in rows)
        statuses = "/".join(sorted({str(row["status"]) for row in rows}))
        written = max(row["mib_written"] for row in rows)
        print(f"| {kind} | {len(rows)} | {statuses} | {times[len(times) // 2]:.0f} [{times[-1]:.0f}] | {written:.1f} |")
    print(f"\nmanager: {result['manager_cpu_share']:.0%} of a core, {result['manager_rss_mib']:.0f} MiB resident")
    print(result["condition_line"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=200, help="concurrent GET clients (default 200)")
    parser.add_argument("--processes", type=int, default=2, help="processes the clients are spread over")
    parser.add_argument("--seconds", type=float, default=30.0, help="seconds under load (default 30)")
    parser.add_argument("--baseline", type=float, default=10.0, help="seconds of probing alone first")
    parser.add_argument("--body-every", type=float, default=5.0, help="seconds between rounds of big bodies (0: none)")
    parser.add_argument("--py-spy", type=Path, default=None, metavar="FILE", help="profile the manager into FILE")
    parser.add_argument("--path", default="/api/v1/hosts", help="what the clients GET")
    parser.add_argument(
        "--manager-nice",
        type=int,
        default=0,
        help="the manager's and the probe's scheduling priority (e.g. -10, as root: ahead of the load's clients)",
    )
    parser.add_argument("--client-nice", type=int, default=0, help="the GET clients' and big bodies' (e.g. 10)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sova-api-load-") as tmp:
        result = run(args, Path(tmp))

    report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
