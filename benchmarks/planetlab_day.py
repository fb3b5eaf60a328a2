"""Wall time of a PlanetLab day (CloudSim's study: 800 hosts, ~1,050 VMs, 288 steps of 300 s) per profile.

Usage: python benchmarks/planetlab_day.py [--day 20110303] [--profiles npa dvfs thr-mmt-0.8 ...] [--workers 2]
       python benchmarks/planetlab_day.py --scenario scenarios/traces/planetlab-10k-day.toml --profiles dvfs

Loading the scenario (reading the day's trace files) is timed once, as every profile of a run shares it;
each profile is then timed from its first step to its summary (the simulator, the observations, the
policies and the executor), as ``wall_seconds`` in summary.json. The target (issue 16) is under 5 s per
profile; CloudSim takes on the order of 100 s. With --workers N, the same profiles are then run again as
one study in N processes (``sova run --workers N``), and the wall times of both ways are compared.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from sova.control.profiles import check_profile
from sova.experiments.scenario_runs import run_profile, run_study
from sova.model.sweep import load_runs

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "papers" / "cloudsim" / "planetlab.toml"
DEFAULT = ("npa", "dvfs", "thr-mmt-0.8", "iqr-mc-1.5", "mad-mu-2.5", "lr-mmt-1.2", "lrr-rs-1.2")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--scenario", type=Path, default=SCENARIO, help="a study with a [params] day (default: CloudSim's)"
    )
    parser.add_argument("--day", default="20110303")
    parser.add_argument("--profiles", nargs="*", default=list(DEFAULT))
    parser.add_argument("--workers", type=int, default=0, help="also time the profiles in this many processes")
    args = parser.parse_args()
    start = time.perf_counter()
    _, (scenario,) = load_runs(args.scenario, check_profile, {"day": args.day})
    load = time.perf_counter() - start
    print(f"day {args.day}: {len(scenario.hosts)} hosts, {len(scenario.vms)} VMs; scenario loaded in {load:.2f} s")
    print("| profile | wall (s) | migrations | energy (kWh) |\n|---|---:|---:|---:|")
    start = time.perf_counter()
    for name in args.profiles:
        summary = run_profile(scenario, name).summary
        print(
            f"| {name} | {summary['wall_seconds']:.2f} | {summary['migrations']['count']} "
            f"| {summary['energy_kwh']:.1f} |",
            flush=True,
        )
    serial = time.perf_counter() - start
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    if args.workers > 1:
        start = time.perf_counter()
        run_study([scenario], args.profiles, workers=args.workers)
        parallel = time.perf_counter() - start
        print(
            f"{len(args.profiles)} profiles one after the other: {serial:.1f} s; in {args.workers} processes: "
            f"{parallel:.1f} s (speed-up {serial / parallel:.2f}x)"
        )


if __name__ == "__main__":
    main()
