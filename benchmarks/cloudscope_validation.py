"""CloudScope's model against the simulator's measurement (the paper's Fig. 5a-c), on the Fig. 2 scenarios
of scenarios/papers/cloudscope/ (the same runs `sova run` makes of them; each reports the model's
prediction with `[outputs] interference = 60`).

- 5a, CPU: mean sysbench job time relative to one VM against the model's mean δ of the VMs.
- 5b, disk: total read throughput of 2, 5 and 10 VMs, 32-512 KB blocks, against n x T1 x δ1 / δn: n
  times one VM's throughput alone, slowed by the model's δ with n VMs over its δ alone.
- 5c, network: each VM's throughput relative to one VM alone against δ1 / δn.
- 6, mixed (std-cpu + std-disk + std-net in every VM, so the target is the mean VM): its read throughput against T1 x
  γdisk,1 / γdisk,n, and its HTTP response time against R1 x γnet,n / γnet,1 (its host's per-resource
  slowdowns: each workload is slowed in its own resource).
- 7, Hadoop: each M:R job's mean map and reduce phase times with 20 prime 3000 or 5000 VMs against the
  times alone x δ with them / δ alone (the workers' mean δ).

Prints each point and the mean relative error per curve (the paper: 3.8 % prime 5000, 10.5 % prime 3000,
7.4 % disk, 4.8 % network). Usage:
    python benchmarks/cloudscope_validation.py [--figure 5a|5b|5c|6|7|all]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from sova.experiments.scenario_runs import run_profile
from sova.model.sweep import load_runs

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios" / "papers" / "cloudscope"
DISK_BLOCKS = (32768, 65536, 131072, 262144, 524288)
HADOOP_JOBS = {1: "1:1", 8: "8:1", 10: "10:2", 58: "58:8"}  # mappers: the job M:R


def sweep_summaries(name: str) -> dict:
    """{swept value: the default profile's summary} of one scenario file."""
    sweep, runs = load_runs(SCENARIOS / f"{name}.toml")
    return {value: run_profile(scenario, "default").summary for value, scenario in zip(sweep.values, runs, strict=True)}


def table(title: str, rows: list[tuple[str, float, float]]) -> float:
    """Print the points of one curve and return its mean relative error."""
    errors = [abs(predicted - measured) / measured for _, measured, predicted in rows]
    print(f"\n{title}\n| point | measured | predicted | error |\n|---|---:|---:|---:|")
    for (label, measured, predicted), error in zip(rows, errors, strict=True):
        print(f"| {label} | {measured:.3g} | {predicted:.3g} | {error:.1%} |")
    print(f"| mean | | | {np.mean(errors):.1%} |", flush=True)
    return float(np.mean(errors))


def figure_5a() -> None:
    for prime in (2000, 3000, 5000):
        runs = sweep_summaries(f"fig2a-prime{prime}")
        base = runs[1]["batch"]["completion_mean"]
        rows = [
            (f"{n} VMs", s["batch"]["completion_mean"] / base, s["interference"]["slowdown_mean"])
            for n, s in runs.items()
        ]
        table(f"Fig. 5a, prime {prime}: job time relative to one VM", rows)


def figure_5b() -> None:
    alone = sweep_summaries("fig2b-disk-1vm")
    for n in (2, 5, 10):
        runs = sweep_summaries(f"fig2b-disk-{n}vm")
        rows = []
        for block in DISK_BLOCKS:
            one, many = alone[block], runs[block]
            predicted = (
                n
                * one["storage"]["throughput_mean"]
                * one["interference"]["slowdown_mean"]
                / many["interference"]["slowdown_mean"]
            )
            rows.append((f"{block // 1024} KB", many["storage"]["throughput_mean"] / 1e6, predicted / 1e6))
        table(f"Fig. 5b, {n} VMs: total read throughput (MB/s)", rows)


def figure_5c() -> None:
    runs = sweep_summaries("fig2c-network")
    one = runs[1]
    rows = [
        (
            f"{n} VMs",
            s["network"]["guest_rx_gbps"] / n / one["network"]["guest_rx_gbps"],
            one["interference"]["slowdown_mean"] / s["interference"]["slowdown_mean"],
        )
        for n, s in runs.items()
    ]
    table("Fig. 5c: each VM's throughput relative to one VM alone", rows)


def figure_6() -> None:
    runs = sweep_summaries("fig6-mixed")
    one = runs[1]

    def target(n: int, summary: dict) -> tuple[float, float, list[float]]:
        """A VM's read MB/s and mean response time (s) (every VM runs the same mix: the mean VM's), and
        its host's (γcpu, γdisk, γnet)."""
        gamma = summary["interference"]["vms"]["mix1"]["gamma"]
        return summary["storage"]["throughput_mean"] / n / 1e6, summary["services"]["response_mean"], gamma

    read1, response1, gamma1 = target(1, one)
    disk, net = [], []
    for n, summary in runs.items():
        read, response, gamma = target(n, summary)
        disk.append((f"{n - 1} others", read, read1 * gamma1[1] / gamma[1]))
        net.append((f"{n - 1} others", response * 1e3, response1 * 1e3 * gamma[2] / gamma1[2]))
    table("Fig. 6a: the target VM's read throughput (MB/s)", disk)
    table("Fig. 6b: the target VM's mean HTTP response time (ms)", net)


def figure_7() -> None:
    alone = sweep_summaries("fig7-hadoop-alone")

    def workers_delta(summary: dict) -> float:
        vms = summary["interference"]["vms"]
        return float(np.mean([v["slowdown"] for name, v in vms.items() if name.startswith("hd-w")]))

    for co_resident in ("prime3000", "prime5000"):
        runs = sweep_summaries(f"fig7-hadoop-{co_resident}")
        for phase in ("map", "reduce"):
            rows = []
            for mappers, summary in runs.items():
                base = alone[mappers]
                ratio = workers_delta(summary) / workers_delta(base)
                rows.append(
                    (
                        HADOOP_JOBS[mappers],
                        summary["mapreduce"][f"{phase}_mean"],
                        base["mapreduce"][f"{phase}_mean"] * ratio,
                    )
                )
            table(f"Fig. 7, {phase} phase (s) with 20 VMs of {co_resident}", rows)


FIGURES = {"5a": figure_5a, "5b": figure_5b, "5c": figure_5c, "6": figure_6, "7": figure_7}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--figure", choices=[*FIGURES, "all"], default="all")
    args = ap.parse_args()
    for name, figure in FIGURES.items():
        if args.figure in (name, "all"):
            figure()


if __name__ == "__main__":
    main()
