"""Service mode with 1,000 agents, each on a bus connection of its own and reporting every second.

Real processes on this machine: nats-server (with its monitoring port), one `sova manager` (threshold
profile, auto mode, SQLite state, hosts stale after 10 s) and `--processes` processes of simulated agents
(by default 4 × 250). Each such process runs the simulator over its own part of the cluster (hosts
pK-hN, 8 cores, with 10 1-vCPU VMs each: CPU burners at 50 % duty over 10 minutes from random starts,
so hotspots come and go) on the wall clock, and one agent per host, each with its own NATS connection
and its own durable consumer for its actions, each running `sova agent`'s loop from its own moment in
the second: every second it publishes its host's report, and it long-polls its actions until the next
report is due. The manager keeps each part's VMs on that part's hosts (an on-hosts rule per part: a
migration must stay within one simulator).

After every host reports and a warm-up, over the measured window: the manager's decision rounds (its
`sova_decision_round_seconds`: mean and p95, the bucket's bound), the reports' lag from agent to manager
(`sova_bus_report_lag_seconds`), the reports the manager took per second, the manager's CPU (share of
one core) and resident memory, nats-server's, the agents' processes' CPU, and the messages through
nats-server per second (its /varz); with the run's conditions (run_conditions.py). Usage:

    python benchmarks/many_agents.py [--processes 4 --per-process 250] [--warmup 60 --measure 120]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from run_conditions import RunConditions, cpu_seconds, rss_mib
from service_load import histogram, quantile, scenario_text
from service_processes import py_spy, spawn, stop, wait_reporting
from sova.service.natsd import NatsServer, free_port
from sova.service.state import StateStore
from sova.service.tokens import TokenBook

STALE_AFTER = 10.0  # s without a report before the manager leaves a host out


def part_scenario(part: int, hosts: int) -> str:
    """One agents' process's part of the cluster: `hosts` hosts with 10 VMs each, reporting every second."""
    return scenario_text(hosts, name=f"agents-p{part}", prefix=f"p{part}-", seed=5 + part, monitor_period=1)


def rules_text(parts: int) -> str:
    """Each part's VMs on that part's hosts: a migration never leaves the simulator that runs it."""
    return "".join(
        f'[[rules]]\nname = "part-{k}"\nkind = "on-hosts"\nvms = ["p{k}-vm*"]\nhosts = ["p{k}-h*"]\n\n'
        for k in range(parts)
    )


# ---------------------------------------------------------------------- one agents' process
async def run_part(scenario_path: Path, ledgers: Path, url: str, user: str) -> None:
    """The simulated part's agents until SIGTERM: each host's agent on its own bus connection, running
    `sova agent`'s own loop (run_host_agent: a report every second on the wall clock, actions long-polled
    in between) from its own moment in the second; the simulator steps with the wall clock beside them,
    and the agents read its latest observation."""
    from sova.drivers.sim import SimDriver
    from sova.model.sweep import load_scenario
    from sova.service.agent import HostAgent, run_host_agent
    from sova.service.bus import Bus
    from sova.service.ledger import Ledger
    from sova.sim.engine import Simulator

    password = os.environ["SOVA_NATS_PASSWORD"]
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    scenario = load_scenario(scenario_path)
    sim = Simulator(scenario)
    driver = SimDriver(sim)
    latest = [driver.observe()]
    buses: list = []
    agents: list[HostAgent] = []
    try:
        for host in sim.host_names:
            buses.append(await Bus.connect(url, user, password, name=f"agent-{host}"))
            agents.append(HostAgent(buses[-1], host, driver, Ledger(ledgers / f"{host}.db")))
        print(f"up: {len(agents)} agents", flush=True)
        period = scenario.control.monitor_period
        rng = random.Random(scenario_path.name)

        async def agent_loop(agent: HostAgent) -> None:
            await asyncio.sleep(rng.uniform(0, period))  # its own moment in the second, as separate hosts
            await run_host_agent(agent, lambda: latest[0], period, stop)

        loops = [asyncio.create_task(agent_loop(agent)) for agent in agents]
        began = time.monotonic()
        while not stop.is_set():  # the simulator on the wall clock, observed after each step
            while sim.t + sim.dt <= time.monotonic() - began:
                sim.step()
                latest[0] = driver.observe()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), sim.dt / 4)
        await asyncio.gather(*loops, return_exceptions=True)
    finally:
        for agent in agents:
            agent.actions.ledger.close()
        for bus in buses:
            with contextlib.suppress(Exception):
                await bus.close()


# ---------------------------------------------------------------------- the whole run
def run(args: argparse.Namespace, workdir: Path) -> dict:
    conditions = RunConditions().start()
    monitor = free_port()
    nats = NatsServer(workdir / "nats", monitor_port=monitor).start()
    state = f"sqlite:///{workdir / 'manager.db'}"
    store = StateStore(state)
    token = TokenBook(store).create("bench", "viewer")
    store.close()
    (workdir / "rules.toml").write_text(rules_text(args.processes))
    for part in range(args.processes):
        (workdir / f"part-{part}.toml").write_text(part_scenario(part, args.per_process))
    api = free_port()
    env = {**os.environ, "SOVA_NATS_PASSWORD": nats.password, "PYTHONUNBUFFERED": "1"}
    bus = ["--nats", nats.url, "--nats-user", nats.user]
    manager_args = [sys.executable, "-m", "sova.cli", "manager", *bus, "--state", state, "--api", f"127.0.0.1:{api}"]
    manager_args += ["--scenario", str(workdir / "part-0.toml"), "--profile", "threshold"]
    manager_args += ["--rules", str(workdir / "rules.toml"), "--stale-after", str(STALE_AFTER)]
    processes: dict[str, subprocess.Popen] = {}
    hosts = args.processes * args.per_process
    try:
        processes["manager"] = spawn(manager_args, env, workdir / "manager.log", args.manager_nice)
        for part in range(args.processes):
            command = [sys.executable, __file__, "--part", str(workdir / f"part-{part}.toml")]
            command += ["--ledgers", str(workdir / "ledgers"), "--nats", nats.url, "--nats-user", nats.user]
            processes[f"agents-{part}"] = spawn(command, env, workdir / f"agents-{part}.log")
        began = time.monotonic()
        wait_reporting(f"http://127.0.0.1:{api}", hosts, processes, workdir, args.startup)
        up_s = time.monotonic() - began
        print(f"every host reporting after {up_s:.0f} s; warming up {args.warmup:g} s", flush=True)
        time.sleep(args.warmup)
        headers = {"Authorization": f"Bearer {token}"}

        def reading() -> dict:
            varz = httpx.get(f"http://127.0.0.1:{monitor}/varz", timeout=10).json()
            metrics = httpx.get(f"http://127.0.0.1:{api}/metrics", headers=headers, timeout=60).text
            health = httpx.get(f"http://127.0.0.1:{api}/healthz", timeout=10).json()
            return {
                "t": time.monotonic(),
                "cpu": {name: cpu_seconds(p.pid) for name, p in processes.items()} | {"nats": _nats_cpu(nats)},
                "varz": varz,
                "rounds": histogram(metrics, "sova_decision_round_seconds"),
                "lag": histogram(metrics, "sova_bus_report_lag_seconds"),
                "reports": _counter(metrics, "sova_reports_received_total"),
                "hosts_reporting": health["hosts_reporting"],
            }

        first = reading()
        profiler = py_spy(processes["manager"].pid, args.measure, args.py_spy, rate=50)  # through the window
        reporting = [first["hosts_reporting"]]
        manager_rss = [(0.0, rss_mib(processes["manager"].pid))]
        deadline = time.monotonic() + args.measure
        while time.monotonic() < deadline:  # how many hosts stay fresh, and the manager's memory, over time
            time.sleep(min(10.0, max(0.0, deadline - time.monotonic())))
            manager_rss.append((round(time.monotonic() - first["t"], 1), rss_mib(processes["manager"].pid)))
            with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
                reporting.append(httpx.get(f"http://127.0.0.1:{api}/healthz", timeout=10).json()["hosts_reporting"])
        last = reading()
        if profiler is not None:
            profiler.wait(60)
        memory = {"manager_rss_mib": rss_mib(processes["manager"].pid), "nats_rss_mib": rss_mib(nats.process.pid)}
        memory["agents_rss_mib"] = sum(rss_mib(p.pid) for n, p in processes.items() if n.startswith("agents"))
        memory["manager_rss_over_window"] = manager_rss
        memory["manager_rss_growth_mib_per_s"] = (manager_rss[-1][1] - manager_rss[0][1]) / manager_rss[-1][0]
    finally:
        stop(processes)
        nats.stop()
        conditions.stop()
    return summarise(args, first, last, reporting, memory, up_s, conditions)


def summarise(args, first: dict, last: dict, reporting: list[int], memory: dict, up_s: float, conditions) -> dict:
    elapsed = last["t"] - first["t"]
    rounds = last["rounds"][1] - first["rounds"][1]
    lags = last["lag"][1] - first["lag"][1]

    def share(name: str) -> float:
        return (last["cpu"][name] - first["cpu"][name]) / elapsed

    return {
        "hosts": args.processes * args.per_process,
        "vms": args.processes * args.per_process * 10,
        "agent_processes": args.processes,
        "manager_nice": args.manager_nice,
        "bus_connections": last["varz"]["connections"],
        "every_host_reporting_after_s": round(up_s, 1),
        "hosts_reporting_min": min(reporting),
        "hosts_reporting_max": max(reporting),
        "rounds": int(rounds),
        "round_mean_ms": 1000 * (last["rounds"][0] - first["rounds"][0]) / rounds if rounds else float("nan"),
        "round_p95_ms": 1000 * quantile(first["rounds"][2], last["rounds"][2], 0.95),
        "lag_mean_ms": 1000 * (last["lag"][0] - first["lag"][0]) / lags if lags else float("nan"),
        "lag_p95_ms": 1000 * quantile(first["lag"][2], last["lag"][2], 0.95),
        "reports_per_s": (last["reports"] - first["reports"]) / elapsed,
        "bus_msgs_in_per_s": (last["varz"]["in_msgs"] - first["varz"]["in_msgs"]) / elapsed,
        "bus_msgs_out_per_s": (last["varz"]["out_msgs"] - first["varz"]["out_msgs"]) / elapsed,
        "bus_kib_in_per_s": (last["varz"]["in_bytes"] - first["varz"]["in_bytes"]) / elapsed / 1024,
        "manager_cpu_share": share("manager"),
        "nats_cpu_share": share("nats"),
        "agents_cpu_share": sum(share(n) for n in last["cpu"] if n.startswith("agents")),
        **memory,
        "measured_s": round(elapsed, 1),
        "conditions": conditions.summary(),
        "condition_line": conditions.line(),
    }


def _nats_cpu(nats: NatsServer) -> float:
    return cpu_seconds(nats.process.pid)


def _counter(metrics: str, name: str) -> float:
    for line in metrics.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def report(row: dict) -> None:
    print(
        "\n| hosts (agents) | connections | decision round mean (ms) | p95 (ms, bucket) | report lag mean (ms) | "
        "reports/s | bus msgs/s in | out | manager CPU | manager RSS (MiB) | nats-server CPU | RSS (MiB) | "
        "agents' CPU |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {row['hosts']} | {row['bus_connections']} | {row['round_mean_ms']:.1f} | {row['round_p95_ms']:.0f} | "
        f"{row['lag_mean_ms']:.0f} | {row['reports_per_s']:.0f} | {row['bus_msgs_in_per_s']:.0f} | "
        f"{row['bus_msgs_out_per_s']:.0f} | {row['manager_cpu_share']:.0%} | {row['manager_rss_mib']:.0f} | "
        f"{row['nats_cpu_share']:.0%} | {row['nats_rss_mib']:.0f} | {row['agents_cpu_share']:.0%} |"
    )
    print(
        f"\n{row['rounds']} decision rounds in {row['measured_s']:.0f} s; hosts reporting "
        f"{row['hosts_reporting_min']}-{row['hosts_reporting_max']}; lag p95 {row['lag_p95_ms']:.0f} ms (bucket); "
        f"the manager's memory grew {row['manager_rss_growth_mib_per_s']:.2f} MiB/s over the window"
    )
    print(row["condition_line"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=4, help="agents' processes (default 4)")
    parser.add_argument("--per-process", type=int, default=250, help="agents (hosts) in each (default 250)")
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds after every host reports")
    parser.add_argument("--measure", type=float, default=120.0, help="seconds measured")
    parser.add_argument("--startup", type=float, default=600.0, help="seconds for every host to report")
    parser.add_argument(
        "--manager-nice",
        type=int,
        default=0,
        help="the manager's scheduling priority (e.g. -10, as root: ahead of the simulated agents)",
    )
    parser.add_argument("--py-spy", type=Path, default=None, metavar="FILE", help="profile the manager into FILE")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--part", type=Path, default=None, help=argparse.SUPPRESS)  # an agents' process
    parser.add_argument("--ledgers", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--nats", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--nats-user", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part is not None:
        logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
        asyncio.run(run_part(args.part, args.ledgers, args.nats, args.nats_user))
        return
    with tempfile.TemporaryDirectory(prefix="sova-agents-") as tmp:
        row = run(args, Path(tmp))
    report(row)
    if args.json:
        args.json.write_text(json.dumps(row, indent=2) + "\n")


if __name__ == "__main__":
    main()
