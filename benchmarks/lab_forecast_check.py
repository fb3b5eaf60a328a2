"""Forecasts on approve-mode plans checked against real QEMU guests (the lab): the simulator against real hosts.

A `sova lab` of two libvirt hosts with two guests each; nats-server, `sova manager --mode approve` (the `sova`
profile, dsriov-vlm tuned as the lab test tunes it) and one `sova agent` per host, as processes. Each run:
the guests of one host burn CPU (`cpu=100`), the manager recommends a migration and forecasts it from its own
Knowledge (a `sova what-if` child), the plan is approved through the API, and the manager checks the
forecast against what the hosts reported over the horizon from the approval: the migration's time, the hottest
host's CPU (seconds above 90 %, and its 95th percentile) and the relieved host's CPU after the move. Then the burners stop and the migrated guest is
moved back, for the next run to start alike. Needs root. Usage:

    sudo .venv/bin/python benchmarks/lab_forecast_check.py [--runs 5] [--horizon 180] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from plan_forecast_check import approve_and_check, finish, forecast_plan, print_row, wait_for
from run_conditions import RunConditions
from sova.lab.lab import Lab, driver_options
from sova.model.actions import OK, RUNNING, Migrate
from sova.service.natsd import NatsServer, free_port
from sova.service.state import StateStore
from sova.service.tokens import TokenBook

MANAGER = [  # as tests/test_lab_integration.py's approve-mode test runs it, but for the guards against moving a VM
    # to and fro (min_residence, hold_down): the guest moved back between runs would keep the next run's plan
    # back for 600 s, or have it refused
    "--profile", "sova", "--param", "dsriov-vlm.alpha=0.6", "--param", "dsriov-vlm.interval=5",
    "--param", "dsriov-vlm.period=5", "--param", "dsriov-vlm.min_residence=20", "--control", "hold_down=20",
    "--mode", "approve",
]  # fmt: skip


def one_run(lab: Lab, state, client: httpx.Client, driver, horizon: float, run: int) -> dict:
    placed = {vm: host for vm, (host, _) in lab.where(state).items()}
    hot = max(sorted({*placed.values()}), key=lambda host: sum(1 for h in placed.values() if h == host))
    busy = sorted(vm for vm, host in placed.items() if host == hot)
    for plan in client.get("/api/v1/plans", params={"state": "pending"}).json()["items"]:
        client.post(f"/api/v1/plans/{plan['id']}/reject")  # a plan of the run before, on another placement
    began = time.time()
    for vm in busy:
        lab.load(vm, ["cpu=100"])
    try:
        plan = wait_for(lambda: forecast_plan(client, since=began), 600, "plan with a forecast")
        done = approve_and_check(client, plan, horizon + 300)
    finally:
        for vm in busy:
            lab.load(vm, [])
    moved = [action for action in plan["actions"] if action["kind"] == "migrate"]
    driver.observe()  # where each guest is now: the driver migrates from there
    now = {vm: host for vm, (host, _) in lab.where(state).items()}
    for action in moved:  # back where it was: the next run starts from the same placement
        if now[action["vm"]] == placed[action["vm"]]:
            continue  # it did not move (the plan failed)
        back = Migrate(vm=action["vm"], dst=placed[action["vm"]], reason="benchmark: back")
        outcome = driver.apply(back)
        while outcome.status == RUNNING:
            time.sleep(0.5)
            outcome = driver.poll(back)
        if outcome.status != OK:
            raise RuntimeError(f"{back.vm} did not move back to {back.dst}: {outcome.message}")
    return {"hot": hot, "seed": run, **done}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--horizon", type=float, default=180.0, help="seconds a forecast looks ahead")
    parser.add_argument("--json", type=Path, help="write the runs here too")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root: it starts a sova lab", file=sys.stderr)
        return 2
    from sova.drivers.libvirt_driver import LibvirtDriver

    conditions = RunConditions().start()
    place = Path(tempfile.mkdtemp(prefix="sova-lab-forecasts-"))
    lab = Lab(place / "lab", say=lambda _: None)
    state = lab.up(n_hosts=2, vms_per_host=2)
    nats = NatsServer(place / "nats").start()
    processes: list[subprocess.Popen] = []
    rows: list[dict] = []
    try:
        database = f"sqlite:///{place / 'manager.db'}"
        store = StateStore(database)
        token = TokenBook(store).create("bench", "operator")
        store.close()
        port = free_port()
        bus = ["--nats", nats.url, "--nats-user", nats.user]
        env = {**os.environ, "SOVA_NATS_PASSWORD": nats.password}

        def spawn(name: str, *words: str) -> None:
            with (place / f"{name}.log").open("wb") as log:
                command = [sys.executable, "-m", "sova.cli", *words]
                processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env))

        spawn("manager", "manager", *bus, "--state", database, "--api", f"127.0.0.1:{port}", *MANAGER,
              "--forecast-horizon", f"{args.horizon:g}")  # fmt: skip
        for host in state.hosts:
            spawn(f"agent-{host.name}", "agent", *bus, "--lab", str(lab.dir), "--host", host.name)
        client = httpx.Client(
            base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        wait_for(lambda: len(client.get("/api/v1/hosts").json()) == 2, 180, "report from both hosts")
        driver = LibvirtDriver({host.name: host.uri for host in state.hosts}, **driver_options(state))
        driver.connect()
        for run in range(1, args.runs + 1):
            rows.append(one_run(lab, state, client, driver, args.horizon, run))
            print_row(rows[-1])
        driver.close()
    finally:
        for process in reversed(processes):
            process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(30)
        nats.stop()
        lab.down()
        print(f"logs: {place}", file=sys.stderr)
    finish(conditions, rows, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
