"""Service mode under load: N simulated hosts, each with its agent reporting every 10 s, one manager.

Everything runs on this machine as real processes: nats-server (with its monitoring port), `sova manager`
(threshold profile, auto mode, SQLite state) and `sova agent --sim` for the N hosts (10 VMs each, CPU
burners at random duty cycles, so hotspots come and go and the manager plans and migrates). After a
warm-up, over a measuring window: the manager's decision round (its /metrics histogram: mean and p95),
the bus's messages per second (nats-server's /varz), and the manager's CPU (share of one core) and
resident memory (/proc); and the run's wall and CPU time and the machine's load average (run_conditions.py).
Usage:

    python benchmarks/service_load.py                      # 100, 300 and 1000 hosts
    python benchmarks/service_load.py --hosts 1000 --measure 120
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from run_conditions import RunConditions, cpu_seconds, rss_mib
from service_processes import spawn, stop, wait_reporting
from sova.service.natsd import NatsServer, free_port
from sova.service.state import StateStore
from sova.service.tokens import TokenBook


def scenario_text(hosts: int, name: str = "", prefix: str = "", seed: int = 5, monitor_period: int = 10) -> str:
    """A cluster of `hosts` hosts (names `prefix`h1 ...) with 10 CPU-burning VMs each, observed every
    `monitor_period` s, under the threshold profile (many_agents.py takes one per agents' process)."""
    name = name or f"load-{hosts}"
    return f"""
[scenario]
name = "{name}"
duration = "24h"
seed = {seed}

[[hosts]]
name = "{prefix}h{{i}}"
count = {hosts}
cores = 8
memory = "64GiB"

[[vms]]
name = "{prefix}vm{{i}}"
count = {hosts * 10}
host = "auto"
vcpus = 1
memory = "2GiB"

[[workloads]]
vm = "{prefix}vm*"
kind = "lookbusy"
duty = 0.5
period = 600

[control]
monitor_period = {monitor_period}
hold_down = 300

[profiles.threshold]
policies = ["threshold-migration"]

[profiles.threshold.params.threshold-migration]
period = 10
"""


def histogram(metrics: str, name: str) -> tuple[float, float, list[tuple[float, float]]]:
    """(sum, count, [(upper bound, cumulative count)]) of a histogram in an exposition."""
    for family in text_string_to_metric_families(metrics):
        if family.name == name:
            total = count = 0.0
            buckets = []
            for sample in family.samples:
                if sample.name.endswith("_sum"):
                    total = sample.value
                elif sample.name.endswith("_count"):
                    count = sample.value
                elif sample.name.endswith("_bucket"):
                    buckets.append((float(sample.labels["le"]), sample.value))
            return total, count, buckets
    return 0.0, 0.0, []


def quantile(before, after, q: float) -> float:
    """The q-quantile of the observations between two readings of a histogram (upper bucket bound)."""
    counts = [(le, b - a) for (le, b), (_, a) in zip(after, before, strict=True)]
    total = counts[-1][1] if counts else 0
    for le, cumulative in counts:
        if total and cumulative >= q * total:
            return le
    return float("nan")


def run(hosts: int, warmup: float, measure: float, workdir: Path) -> dict:
    conditions = RunConditions().start()
    workdir.mkdir(parents=True)
    scenario = workdir / "load.toml"
    scenario.write_text(scenario_text(hosts))
    monitor = free_port()
    nats = NatsServer(workdir / "nats", monitor_port=monitor).start()
    state = f"sqlite:///{workdir / 'manager.db'}"
    store = StateStore(state)
    token = TokenBook(store).create("bench", "viewer")
    store.close()
    api = free_port()
    env = {**os.environ, "SOVA_NATS_PASSWORD": nats.password}
    bus = ["--nats", nats.url, "--nats-user", nats.user]
    sova = [sys.executable, "-m", "sova.cli"]
    options = ["--api", f"127.0.0.1:{api}", "--scenario", str(scenario), "--profile", "threshold"]
    manager_command = [*sova, "manager", *bus, "--state", state, *options, "--stale-after", "60"]
    agents_command = [*sova, "agent", *bus, "--sim", str(scenario), "--ledger", str(workdir / "ledgers")]
    processes = {
        "manager": spawn(manager_command, env, workdir / "manager.log"),
        "agents": spawn(agents_command, env, workdir / "agents.log"),
    }
    manager = processes["manager"]
    headers = {"Authorization": f"Bearer {token}"}
    try:
        wait_reporting(f"http://127.0.0.1:{api}", hosts, processes, workdir, 600)
        time.sleep(warmup)

        def reading():
            varz = httpx.get(f"http://127.0.0.1:{monitor}/varz", timeout=10).json()
            metrics = httpx.get(f"http://127.0.0.1:{api}/metrics", headers=headers, timeout=30).text
            return time.monotonic(), cpu_seconds(manager.pid), varz, histogram(metrics, "sova_decision_round_seconds")

        t0, cpu0, varz0, rounds0 = reading()
        time.sleep(measure)
        t1, cpu1, varz1, rounds1 = reading()
        health = httpx.get(f"http://127.0.0.1:{api}/healthz", timeout=5).json()
        elapsed = t1 - t0
        n_rounds = rounds1[1] - rounds0[1]
        row = {
            "hosts": hosts,
            "vms": hosts * 10,
            "hosts_reporting": health["hosts_reporting"],
            "round_mean_ms": 1000 * (rounds1[0] - rounds0[0]) / n_rounds if n_rounds else float("nan"),
            "round_p95_ms": 1000 * quantile(rounds0[2], rounds1[2], 0.95),
            "rounds": int(n_rounds),
            "bus_msgs_in_per_s": (varz1["in_msgs"] - varz0["in_msgs"]) / elapsed,
            "bus_msgs_out_per_s": (varz1["out_msgs"] - varz0["out_msgs"]) / elapsed,
            "bus_kib_in_per_s": (varz1["in_bytes"] - varz0["in_bytes"]) / elapsed / 1024,
            "manager_cpu_share": (cpu1 - cpu0) / elapsed,
            "manager_rss_mib": rss_mib(manager.pid),
            "nats_rss_mib": rss_mib(nats.process.pid),
        }
    finally:
        stop(processes)
        nats.stop()
        conditions.stop()
    return row | {"conditions": conditions.summary()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds after every host reports")
    parser.add_argument("--measure", type=float, default=120.0, help="seconds measured")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="sova-load-") as tmp:
        for hosts in args.hosts:
            row = run(hosts, args.warmup, args.measure, Path(tmp) / str(hosts))
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\n| hosts | VMs | round mean (ms) | round p95 (ms) | bus msgs/s in | manager CPU | manager RSS (MiB) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['hosts']} | {r['vms']} | {r['round_mean_ms']:.1f} | {r['round_p95_ms']:.0f} | "
            f"{r['bus_msgs_in_per_s']:.0f} | {r['manager_cpu_share']:.0%} | {r['manager_rss_mib']:.0f} |"
        )
    for r in rows:
        c = r["conditions"]
        print(
            f"{r['hosts']} hosts, {c['date']}: {c['wall_s']:.0f} s wall, {c['cpu_s']:.0f} s CPU, "
            f"load average {c['load_mean']:.2f} ({c['load_min']}-{c['load_max']})"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
