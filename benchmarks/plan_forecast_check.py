"""Forecasts on approve-mode plans, checked by the manager itself, over several runs of `sova serve --sim`.

Each run starts the whole service (nats-server, `sova manager --mode approve`, the simulated cluster's
agents) on a scenario at its own seed, waits for the first plan whose forecast came, approves it through the
API, and waits until the manager has checked the forecast against what the cluster reported over the
horizon from the approval. The forecast ran at the snapshot's seed, not the cluster's: this is the simulator
against itself at another seed, with the cluster's clock running on the wall clock (times --speed). Usage:

    python benchmarks/plan_forecast_check.py                       # quickstart, threshold, 5 runs
    python benchmarks/plan_forecast_check.py --runs 3 --speed 10 --json out.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from run_conditions import RunConditions
from sova.model.atomic_file import write_atomically
from sova.service.natsd import free_port
from sova.service.plan_forecasts import CHECKED as QUANTITIES

ROOT = Path(__file__).resolve().parents[1]


def one_run(args, seed: int, place: Path) -> dict:
    """One service run: the first plan with a forecast approved, and its check once the horizon passed."""
    port = free_port()
    directory = place / f"run-{seed}"
    command = [sys.executable, "-m", "sova.cli", "serve", "--sim", str(args.scenario), "--profile", args.profile]
    command += ["--mode", "approve", "--speed", f"{args.speed:g}", "--seed", str(seed), "--dir", str(directory)]
    command += ["--api", f"127.0.0.1:{port}", "--forecast-horizon", f"{args.horizon:g}"]
    with (place / f"serve-{seed}.log").open("wb") as log:
        serve = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        token = wait_for(lambda: (directory / "admin.token").read_text().strip(), args.timeout, "admin token", serve)
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"})
        plan = wait_for(lambda: forecast_plan(client), args.timeout, "plan with a forecast", serve)
        return {"seed": seed, **approve_and_check(client, plan, args.timeout + 2 * args.horizon / args.speed, serve)}
    finally:
        serve.send_signal(signal.SIGINT)
        serve.wait(120)


def wait_for(probe, timeout: float, what: str, process: subprocess.Popen | None = None):
    """`probe()` once it gives something, tried every second (an API not up yet, or a file not there yet, is a
    no); a RuntimeError past `timeout`, or once `process` (the service) has ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the service ended (exit {process.returncode}) before the {what}")
        with contextlib.suppress(OSError, httpx.HTTPError, ValueError, KeyError, TypeError):
            found = probe()
            if found:
                return found
        time.sleep(1.0)
    raise RuntimeError(f"no {what} in {timeout:g} s")


def forecast_plan(client: httpx.Client, since: float = 0.0) -> dict | None:
    """A plan waiting for approval, made at or after `since` (wall clock), whose forecast came."""
    for plan in client.get("/api/v1/plans", params={"state": "pending"}).json()["items"]:
        if plan["created"] >= since and plan["forecast"] and plan["forecast"]["answer"]:
            return plan
    return None


def approve_and_check(client: httpx.Client, plan: dict, timeout: float, process=None) -> dict:
    """`plan` approved, and its forecast once the manager checked it (waited for up to `timeout` s)."""
    decided = client.post(f"/api/v1/plans/{plan['id']}/approve").json()

    def checked() -> dict | None:
        forecast = client.get(f"/api/v1/plans/{plan['id']}").json()["forecast"]
        return forecast if forecast["checked"] else None

    forecast = wait_for(checked, timeout, "forecast's check", process)
    return {
        "plan": plan["id"],
        "actions": plan["actions"],
        "state": decided["state"],
        "forecast": forecast["answer"]["alternatives"],
        "checked": forecast["checked"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", type=Path, default=ROOT / "scenarios" / "quickstart.toml")
    parser.add_argument("--profile", default="threshold")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1, help="the first run's seed; each next run's one more")
    parser.add_argument("--speed", type=float, default=20.0)
    parser.add_argument("--horizon", type=float, default=600.0, help="simulated seconds")
    parser.add_argument("--timeout", type=float, default=300.0, help="wall seconds to wait for a plan")
    parser.add_argument("--json", type=Path, help="write the runs here too")
    args = parser.parse_args()
    conditions = RunConditions().start()
    rows = []
    with tempfile.TemporaryDirectory(prefix="sova-plan-forecasts-") as place:
        for seed in range(args.seed, args.seed + args.runs):
            rows.append(one_run(args, seed, Path(place)))
            print_row(rows[-1])
    finish(conditions, rows, args.json)
    return 0


def finish(conditions: RunConditions, rows: list[dict], out: Path | None) -> None:
    """The errors over the runs and the run's conditions printed, and everything written to `out` if asked."""
    conditions.stop()
    summary = conditions.summary()
    print_errors(rows)
    print(json.dumps(summary))
    if out is not None:
        write_atomically(out, json.dumps({"conditions": summary, "runs": rows}, indent=2))


def print_row(row: dict) -> None:
    actions = "; ".join(f"{a['kind']} {a.get('vm', '')} -> {a.get('dst', '')}" for a in row["actions"])
    cells = []
    for quantity in QUANTITIES:
        entry = row["checked"]["quantities"][quantity]
        error = "n/a" if entry["error"] is None else f"{entry['error']:+.3f}"
        cells.append(f"{quantity} {_value(entry['forecast'])} vs {_value(entry['measured'])} ({error})")
    print(f"seed {row['seed']}, plan {row['plan']} ({actions}): " + ", ".join(cells), flush=True)
    for move in row["forecast"][-1].get("moves", []):  # what the forecast's migration time stands on
        print(
            f"  forecast: {move['vm']} {move['src']} -> {move['dst']} {move['seconds']:.1f} s, "
            f"{move['bytes'] / 2**30:.2f} GiB sent in {move['rounds']} round(s), {move['status']}",
            flush=True,
        )


def print_errors(rows: list[dict]) -> None:
    for quantity in QUANTITIES:
        errors = [row["checked"]["quantities"][quantity]["error"] for row in rows]
        known = [error for error in errors if error is not None]
        if known:
            mean = sum(abs(error) for error in known) / len(known)
            print(f"{quantity}: mean |error| {mean:.3f} over {len(known)} run(s); each: {known}")


def _value(value) -> str:
    return "n/a" if value is None else f"{value:.3g}"


if __name__ == "__main__":
    raise SystemExit(main())
