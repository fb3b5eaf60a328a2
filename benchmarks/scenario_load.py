"""Scenario load plus simulator set-up at data-center scale: wall time and peak memory (target: under 30 s
and 4 GiB for 10,000 hosts / 100,000 VMs).

Cases, each in its own process so that its peak memory is its own:
  dc-100k     10,000 hosts, 100,000 VMs in four groups, workloads by glob (web*, burn*, db*)
  traces-10k  1,174 hosts, 11,746 VMs with one PlanetLab trace entry each (the real traces)
  rnd-500     50 hosts, 500 VMs from Bitbrains Rnd in one entry: the 50 MB archive as a trace set
  churn-100k  10,000 hosts, 50,000 VMs from the start and 50,000 that arrive and leave over the hour in ten
              waves, placed by admission when they come
  opendc-50   5 hosts, the 50 VMs of OpenDC's bitbrains-small (Parquet) taking their lifetimes from it

Usage: python benchmarks/scenario_load.py [--case NAME]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

from sova.model.scenario_reader import scenario_from_dict
from sova.sim.engine import Simulator

PLANETLAB = Path(__file__).resolve().parents[2] / "shared" / "traces" / "planetlab"
BITBRAINS = Path(__file__).resolve().parents[2] / "shared" / "traces" / "bitbrains"


def dc_100k() -> dict:
    hosts, vms = 10_000, 100_000
    return {
        "scenario": {"name": "dc-100k", "duration": 3600, "seed": 1},
        "topology": {"kind": "fat-tree", "k": 36},
        "hosts": [{"name": "h{i}", "count": hosts, "cores": 32, "memory": "256GiB"}],
        "storage": [{"name": "san1"}],
        "vms": [
            {"name": f"{group}{{i}}", "count": vms // 4, "vcpus": 2, "memory": "4GiB"}
            for group in ("web", "burn", "db", "idle")
        ],
        "workloads": [
            {"vm": "web*", "kind": "httperf", "rate": 300, "page": "32KB", "client": "external"},
            {"vm": "burn*", "kind": "lookbusy", "duty": 0.5, "util": 0.8},
            {"vm": "db*", "kind": "fio", "iops": 200, "size": "16KB"},
        ],
    }


def traces_10k() -> dict:
    days = sorted(p for p in PLANETLAB.iterdir() if p.is_dir())
    files = [f for day in days for f in sorted(day.iterdir())]
    return {
        "scenario": {"name": "traces-10k", "duration": 86400, "step": 60, "seed": 1},
        "hosts": [{"name": "h{i}", "count": len(files) // 10, "cores": 16, "memory": "256GiB"}],
        "vms": [{"name": "pl{i}", "count": len(files), "vcpus": 1, "memory": "1GiB"}],
        "workloads": [{"vm": f"pl{i}", "kind": "planetlab", "file": str(f)} for i, f in enumerate(files, start=1)],
    }


def rnd_500() -> dict:
    archive = BITBRAINS / "gwa_t12_rnd" / "rnd_2013-7_all500vms.tar.gz"
    return {
        "scenario": {"name": "rnd-500", "duration": 86400, "step": 300, "seed": 1},
        "hosts": [{"name": "h{i}", "count": 50, "cores": 32, "memory": "512GiB"}],
        "storage": [{"name": "san1"}],
        "vms": [{"name": "rnd{i}", "count": 500, "vcpus": 4, "memory": "8GiB"}],
        "workloads": [{"vm": "rnd*", "kind": "bitbrains", "file": str(archive)}],
    }


def churn_100k() -> dict:
    raw = dc_100k()
    raw["scenario"]["name"] = "churn-100k"
    waves = [
        {
            "name": f"w{k}-{{i}}",
            "count": 5_000,
            "vcpus": 2,
            "memory": "4GiB",
            "arrive": 300 * k,
            "depart": 300 * k + 900,
        }
        for k in range(1, 11)
    ]
    raw["vms"] = [{**entry, "count": 12_500} for entry in raw["vms"]] + waves
    raw["workloads"].append({"vm": "w*", "kind": "lookbusy", "duty": 0.5, "util": 0.5})
    return raw


def opendc_50() -> dict:
    return {
        "scenario": {"name": "opendc-50", "duration": 86400 * 30, "step": 300, "seed": 1},
        "hosts": [{"name": "h{i}", "count": 5, "cores": 32, "memory": "256GiB"}],
        "vms": [{"name": "bb{i}", "count": 50, "from_trace": True}],
        "workloads": [{"vm": "bb*", "kind": "opendc", "file": str(BITBRAINS / "opendc_bitbrains_small_v4")}],
    }


CASES = {
    "dc-100k": dc_100k,
    "traces-10k": traces_10k,
    "rnd-500": rnd_500,
    "churn-100k": churn_100k,
    "opendc-50": opendc_50,
}
SOURCES = {"traces-10k": lambda: PLANETLAB, "rnd-500": lambda: BITBRAINS, "opendc-50": lambda: BITBRAINS}


def run_case(name: str) -> None:
    raw = CASES[name]()
    started = time.perf_counter()
    scenario = scenario_from_dict(raw, name)
    loaded = time.perf_counter()
    Simulator(scenario)
    ready = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    print(
        f"| {name} | {len(scenario.hosts):,} | {len(scenario.vms):,} | {len(scenario.workloads):,} "
        f"| {loaded - started:.1f} | {ready - loaded:.1f} | {ready - started:.1f} | {peak:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", choices=sorted(CASES), help="run one case in this process")
    args = parser.parse_args()
    if args.case:
        run_case(args.case)
        return
    print("| case | hosts | VMs | workload entries | load (s) | set-up (s) | total (s) | peak memory (GiB) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in CASES:
        if name in SOURCES and not SOURCES[name]().exists():
            print(f"| {name} | skipped: no traces at {SOURCES[name]()} |")
            continue
        subprocess.run([sys.executable, __file__, "--case", name], check=True)


if __name__ == "__main__":
    main()
