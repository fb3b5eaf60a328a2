"""What-if speed: how long `sova what-if` takes to answer from a cluster snapshot, at 100 hosts / 1,000 VMs and
at 1,000 hosts / 10,000 VMs (issue 36's targets: under 2 s and under 20 s on this machine).

The cluster is sim_speed.py's mixed data center (web, burners, storage IO, netperf pairs with VFs, PlanetLab
replay) managed by threshold-migration; it is run to 11 min, its last 10 min exported at 10 s, and the
what-if runs doing nothing and the profile as it is over 30 min. Wall and CPU time of the what-if alone (the
alternatives one after another in this process), at the simulator step asked (`--step`, default the
snapshot's sample interval), and the snapshot's making from the run's Knowledge alone (what a manager's event loop
spends on it before a forecast). With --workers 2 the alternatives run in two processes: the CPU column is then
this process's alone, not theirs. Usage:

    python benchmarks/what_if_speed.py                    # both sizes
    python benchmarks/what_if_speed.py --sizes 100 --step 1
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sim_speed import scenario
from sova.cli.snapshot import demand_file, export_run
from sova.experiments.scenario_runs import run_until
from sova.experiments.what_if import alternatives, run_alternatives
from sova.model.cluster_snapshot import ExportSettings, write_snapshot
from sova.model.scenario import ProfileSpec
from sova.model.sweep import load_scenario

PROFILE = ProfileSpec("as-is", ("threshold-migration",))


def measure(n_hosts: int, step: float | None, horizon: float, place: Path, workers: int = 1) -> dict:
    base = dataclasses.replace(scenario(n_hosts), profiles={"as-is": PROFILE})
    t0 = time.perf_counter()
    settings = ExportSettings(window=600.0, interval=10.0)
    out = place / f"cluster-{n_hosts}.toml"
    run = run_until(base, "as-is", 660.0)
    snapshot_start = time.perf_counter()
    document, demand = export_run(run, base, "as-is", out, settings)
    snapshot_s = time.perf_counter() - snapshot_start  # what a manager's loop spends on it
    del run
    export_start = time.perf_counter()
    write_snapshot(out, demand_file(out), document, demand)
    exported = time.perf_counter() - export_start
    reached = export_start - t0
    del document, demand  # as `sova what-if SNAPSHOT` starts: without the run that made the snapshot
    gc.collect()
    snapshot = load_scenario(out)
    chosen = alternatives(snapshot, snapshot.profiles["as-is"])
    wall0, cpu0 = time.perf_counter(), time.process_time()
    results = run_alternatives(snapshot, chosen, horizon, workers=workers, step=step or settings.interval)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return {
        "hosts": n_hosts,
        "vms": len(snapshot.vms),
        "run_to_snapshot_s": reached,
        "export_s": exported,
        "snapshot_s": snapshot_s,
        "alternatives": len(results),
        "step": step or settings.interval,
        "what_if_wall_s": wall,
        "what_if_cpu_s": cpu,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000], help="numbers of hosts (10 VMs each)")
    ap.add_argument("--step", type=float, default=None, help="the what-if's simulator step (default: 10 s)")
    ap.add_argument("--horizon", type=float, default=1800.0, help="simulated seconds ahead (default 1800)")
    ap.add_argument("--workers", type=int, default=1, help="alternatives in this many processes (CPU: this one's)")
    args = ap.parse_args()
    print(
        "| hosts | VMs | alternatives | step (s) | what-if wall (s) | what-if CPU (s) | snapshot (s) | files written (s) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="sova-what-if-bench-") as place:
        for n in args.sizes:
            r = measure(n, args.step, args.horizon, Path(place), args.workers)
            print(
                f"| {r['hosts']:,} | {r['vms']:,} | {r['alternatives']} | {r['step']:g} | {r['what_if_wall_s']:.1f} | "
                f"{r['what_if_cpu_s']:.1f} | {r['snapshot_s']:.2f} | {r['export_s']:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
