"""CloudScope's model (the `interference` analyzer's prediction, `[outputs] interference`) against the
simulator's measurement, point by point, as the paper validates it:

- 5a, CPU: mean sysbench job time relative to one VM against the model's mean δ of the VMs.
- 5b, disk: total read throughput of n VMs, 32-512 KB blocks, against n x T1 x δ1 / δn.
- 5c, network: each VM's throughput relative to one VM alone against δ1 / δn.
- 6, mixed: the mean VM's read throughput against T1 x γdisk,1 / γdisk,n and its response time against
  R1 x γnet,n / γnet,1 (each workload slowed in its own resource).
- 7, Hadoop: each job's mean map and reduce phase times beside prime VMs against the times alone x the
  workers' δ with them / δ alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sova.report.fidelity.paper_runs import sweep

Rows = list[tuple[str, float, float]]  # (point, measured, predicted)
DISK_BLOCKS = (32768, 65536, 131072, 262144, 524288)
HADOOP_JOBS = {1: "1:1", 8: "8:1", 10: "10:2", 58: "58:8"}  # mappers: the job M:R


def default_runs(root: Path, name: str) -> dict:
    """{swept value: the default profile's summary} of scenarios/papers/cloudscope/NAME.toml."""
    return {value: runs["default"] for value, runs in sweep(root, f"cloudscope/{name}.toml", ["default"]).items()}


def fig5a_rows(runs: dict) -> Rows:
    base = runs[1]["batch"]["completion_mean"]
    return [
        (f"{n} VMs", s["batch"]["completion_mean"] / base, s["interference"]["slowdown_mean"]) for n, s in runs.items()
    ]


def fig5b_rows(alone: dict, runs: dict, n: int) -> Rows:
    rows = []
    for block in DISK_BLOCKS:
        one, many = alone[block], runs[block]
        slowdown = one["interference"]["slowdown_mean"] / many["interference"]["slowdown_mean"]
        predicted = n * one["storage"]["throughput_mean"] * slowdown
        rows.append((f"{block // 1024} KB", many["storage"]["throughput_mean"] / 1e6, predicted / 1e6))
    return rows


def fig5c_rows(runs: dict) -> Rows:
    one = runs[1]
    return [
        (
            f"{n} VMs",
            s["network"]["guest_rx_gbps"] / n / one["network"]["guest_rx_gbps"],
            one["interference"]["slowdown_mean"] / s["interference"]["slowdown_mean"],
        )
        for n, s in runs.items()
    ]


def fig6_rows(runs: dict) -> tuple[Rows, Rows]:
    """(read MB/s rows, response ms rows) of the mean VM (every VM runs the same mix)."""

    def target(n: int, summary: dict) -> tuple[float, float, list[float]]:
        gamma = summary["interference"]["vms"]["mix1"]["gamma"]
        return summary["storage"]["throughput_mean"] / n / 1e6, summary["services"]["response_mean"], gamma

    read1, response1, gamma1 = target(1, runs[1])
    disk, net = [], []
    for n, summary in runs.items():
        read, response, gamma = target(n, summary)
        disk.append((f"{n - 1} others", read, read1 * gamma1[1] / gamma[1]))
        net.append((f"{n - 1} others", response * 1e3, response1 * 1e3 * gamma[2] / gamma1[2]))
    return disk, net


def fig7_rows(alone: dict, runs: dict, phase: str) -> Rows:
    def workers_delta(summary: dict) -> float:
        vms = summary["interference"]["vms"]
        return float(np.mean([v["slowdown"] for name, v in vms.items() if name.startswith("hd-w")]))

    rows = []
    for mappers, summary in runs.items():
        base = alone[mappers]
        predicted = base["mapreduce"][f"{phase}_mean"] * workers_delta(summary) / workers_delta(base)
        rows.append((HADOOP_JOBS[mappers], summary["mapreduce"][f"{phase}_mean"], predicted))
    return rows
