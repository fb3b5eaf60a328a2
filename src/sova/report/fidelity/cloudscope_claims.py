"""CloudScope's figures as experiments and claims (scenarios/papers/cloudscope/): Fig. 2's measurements,
its model's validation (Fig. 5-7, computed in interference_validation.py), the scheduler (Fig. 8) and the
adaptive Dom0 (Fig. 9)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from sova.report.fidelity.claims import Claim, Experiment, Metrics
from sova.report.fidelity.interference_validation import (
    Rows,
    default_runs,
    fig5a_rows,
    fig5b_rows,
    fig5c_rows,
    fig6_rows,
    fig7_rows,
)
from sova.report.fidelity.paper_runs import by_profile, mean_error, sweep

PAPER = "CloudScope"


def _errors(rows: Rows) -> float:
    return mean_error([(measured, predicted) for _, measured, predicted in rows])


def measure_fig2(root: Path) -> Metrics:
    """Fig. 2a-c and the model's errors on them (Fig. 5a-c)."""
    metrics: Metrics = {}
    for prime in (2000, 3000, 5000):
        runs = default_runs(root, f"fig2a-prime{prime}")
        rows = fig5a_rows(runs)
        metrics |= {f"prime{prime}.{n}": measured for (_, measured, _), n in zip(rows, runs, strict=True)}
        metrics[f"err5a.prime{prime}"] = _errors(rows)
    alone = default_runs(root, "fig2b-disk-1vm")
    for n in (2, 5, 10):
        runs = default_runs(root, f"fig2b-disk-{n}vm")
        for block, summary in runs.items():
            metrics[f"disk{n}.read.{block}"] = summary["storage"]["throughput_mean"] / 1e6
            metrics[f"disk{n}.dom0.{block}"] = 100 * summary["hosts"]["pm"]["dom0_mean"]
        metrics[f"err5b.{n}vm"] = _errors(fig5b_rows(alone, runs, n))
        metrics[f"disk{n}.dom0_small"] = float(np.mean([metrics[f"disk{n}.dom0.{b}"] for b in (1024, 4096, 16384)]))
        metrics[f"disk{n}.dom0_large"] = float(np.mean([metrics[f"disk{n}.dom0.{b}"] for b in (262144, 524288)]))
    runs = default_runs(root, "fig2c-network")
    for (_, per_vm, _), (n, summary) in zip(fig5c_rows(runs), runs.items(), strict=True):
        metrics[f"net.per_vm.{n}"] = per_vm
        metrics[f"net.dom0.{n}"] = 100 * summary["hosts"]["pm"]["dom0_mean"]
    metrics["err5c"] = _errors(fig5c_rows(runs))
    return metrics


def measure_fig6(root: Path) -> Metrics:
    runs = default_runs(root, "fig6-mixed")
    disk, net = fig6_rows(runs)
    jobs = [s["batch"]["completion_mean"] for s in runs.values()]
    return {"err6a": _errors(disk), "err6b": _errors(net), "cpu_slowdown_max": 100 * (max(jobs) / jobs[0] - 1)}


def measure_fig7(root: Path) -> Metrics:
    alone = default_runs(root, "fig7-hadoop-alone")
    metrics: Metrics = {}
    for co in ("prime3000", "prime5000"):
        runs = default_runs(root, f"fig7-hadoop-{co}")
        for phase in ("map", "reduce"):
            metrics[f"err7.{co}.{phase}"] = _errors(fig7_rows(alone, runs, phase))
            metrics[f"slower.{co}.{phase}"] = min(
                runs[m]["mapreduce"][f"{phase}_mean"] / alone[m]["mapreduce"][f"{phase}_mean"] for m in runs
            )
    metrics["err7.map"] = np.mean([metrics[f"err7.{co}.map"] for co in ("prime3000", "prime5000")])
    metrics["err7.reduce"] = np.mean([metrics[f"err7.{co}.reduce"] for co in ("prime3000", "prime5000")])
    return metrics


def measure_fig8(root: Path) -> Metrics:
    """Each group's improvement (per cent) under CloudScope's scheduler over first fit."""
    runs = by_profile(root, "cloudscope/fig8-scheduling.toml")
    base, ours = (runs[name]["groups"] for name in ("default", "cloudscope"))
    jobs = {name: runs[name]["mapreduce"]["completion_mean"] for name in ("default", "cloudscope")}
    return {
        "gain.std-cpu": 100 * (base["std-cpu"]["batch_completion_mean"] / ours["std-cpu"]["batch_completion_mean"] - 1),
        "gain.std-disk": 100 * (ours["std-disk"]["io_bytes_per_s"] / base["std-disk"]["io_bytes_per_s"] - 1),
        "gain.std-net": 100 * (base["std-net"]["response_mean"] / ours["std-net"]["response_mean"] - 1),
        "gain.hadoop": 100 * (jobs["default"] / jobs["cloudscope"] - 1),
    }


def measure_fig9(root: Path) -> Metrics:
    runs = sweep(root, "cloudscope/fig9-dom0-weight.toml")
    rx = {w: p["static"]["network"]["guest_rx_gbps"] for w, p in runs.items()}
    return {
        "gain.512": 100 * (rx[512] / rx[256] - 1),
        "adaptive_actions": float(runs[256]["adaptive"]["actions"]["succeeded"]),
    }


EXPERIMENTS = [
    Experiment(
        "cloudscope-fig2",
        ("cloudscope/fig2a-prime*.toml", "cloudscope/fig2b-disk-*.toml", "cloudscope/fig2c-network.toml"),
        measure_fig2,
        quick=True,
    ),
    Experiment("cloudscope-fig6", ("cloudscope/fig6-mixed.toml",), measure_fig6, quick=True),
    Experiment("cloudscope-fig7", ("cloudscope/fig7-hadoop-*.toml",), measure_fig7),
    Experiment("cloudscope-fig8", ("cloudscope/fig8-scheduling.toml",), measure_fig8),
    Experiment("cloudscope-fig9", ("cloudscope/fig9-dom0-weight.toml",), measure_fig9),
]


def _rising(metrics: Metrics, keys: list[str]) -> bool:
    return all(metrics[a] <= metrics[b] for a, b in itertools.pairwise(keys))


def _model(figure: str, quantity: str, paper: float, experiment: str, metric: str, cause: str) -> Claim:
    """A validation claim: the model's mean error against the measurement, at most twice the paper's."""
    return Claim(
        PAPER,
        figure,
        f"{quantity}: model's mean error (at most 2x the paper's)",
        f"{paper} %",
        experiment,
        metric,
        "%",
        bound=lambda value: value <= 2 * paper,
        cause=cause,
    )


FIG8 = {  # group: the row's label, the paper's gain (%), the least gain in its direction, the cause of a miss
    "std-disk": ("std-disk's gain under CloudScope's scheduler", 10, 1, ""),
    "std-net": (
        "std-net's gain",
        10,
        1,
        "first fit's Dom0s are quiet once a vif is bounded by its netback thread, so no placement helps",
    ),
    "std-cpu": (
        "std-cpu's gain",
        5.6,
        1,
        "prime 2000 jobs are slowed on no host: none has 16 busy threads (Fig. 2a's mechanisms)",
    ),
    "hadoop": ("Hadoop's gain", 2.1, 0, ""),
}
DOM0_SMALL_BLOCKS = {  # guests: the cause of a miss
    10: "at 16 KB the disk, not Dom0, binds here (Dom0 50 %): blkback's per-request cost (50 us) is chosen, the "
    "figure gives no number",
    5: "five guests' requests wait behind each other at the disk's two units, so Dom0 idles (docs/simulator.md)",
}


def _fig8(group: str, quantity: str, paper: float, least: float, cause: str) -> Claim:
    """A group's gain under CloudScope's scheduler over first fit: within 3 points of the paper's agrees."""
    metric = f"gain.{group}"
    return Claim(
        PAPER,
        "Fig. 8",
        quantity,
        f"{paper:g} %",
        "cloudscope-fig8",
        metric,
        "%",
        target=paper,
        tolerance=3,
        direction=lambda m: m[metric] > least,
        cause=cause,
    )


def _dom0_small_blocks(guests: int, cause: str) -> Claim:
    """Dom0 busy at 1-16 KB blocks: the paper's 80-90 %, and at least twice its load at 128 KB."""
    metric = f"disk{guests}.dom0_small"
    return Claim(
        PAPER,
        "Fig. 2b",
        f"Dom0 busy at 1-16 KB blocks, {guests} VMs",
        "80-90 %",
        "cloudscope-fig2",
        metric,
        "%",
        target=85,
        tolerance=5,
        direction=lambda m: m[metric] > 2 * m[f"disk{guests}.dom0.131072"],
        cause=cause,
    )


DOM0_UNDER = (
    "Dom0 needs 1.93 cores at 9.415 Gb/s where weight 256 already gives it 2.91 (Xen's credit scheduler: weight x "
    "active vCPUs), so it never runs OVER and no weight matters; the 10 GbE port binds first. The paper's own Fig. "
    "2c needed 8 Dom0 vCPUs, a Dom0 wanting all 4 cores, which would run OVER at 256 and not from 366: the cost of "
    "running OVER on a host with idle threads has no source here (docs/policies.md)"
)
SLOW_EARLY = (
    "nothing slows a job below one runnable vCPU per hardware thread and 16 busy threads: `sched_overhead` acts "
    "above one runnable vCPU per thread and `ht_yield` past 16 busy threads (docs/simulator.md, Fig. 2a)"
)
HT_UNSEEN = (
    "the slowdown here is the hyper-threads' and the run queue's (Fig. 2a's mechanisms), which Eq. 1-2 do not see "
    "(benchmarks/cloudscope_validation.py prints each point)"
)
CLAIMS = [
    Claim(
        PAPER,
        "Fig. 2a",
        "prime 3000, job time at 45 VMs over one VM",
        "1.7x",
        "cloudscope-fig2",
        "prime3000.45",
        "x",
        target=1.7,
        fitted="sched_overhead",
    ),
    Claim(
        PAPER,
        "Fig. 2a",
        "prime 3000, job time at 5 VMs over one VM",
        "slower already at 5 VMs",
        "cloudscope-fig2",
        "prime3000.5",
        "x",
        direction=lambda m: m["prime3000.5"] > 1.005,
        cause=SLOW_EARLY,
    ),
    Claim(
        PAPER,
        "Fig. 2a",
        "prime 3000 at 25 VMs (steeper from there)",
        "steeper from 25 VMs",
        "cloudscope-fig2",
        "prime3000.25",
        "x",
        direction=lambda m: m["prime3000.45"] - m["prime3000.25"] > 1.5 * (m["prime3000.25"] - m["prime3000.5"]),
    ),
    Claim(
        PAPER,
        "Fig. 2a",
        "prime 2000 at 45 VMs",
        "stable until 35 VMs, then slightly slower",
        "cloudscope-fig2",
        "prime2000.45",
        "x",
        direction=lambda m: m["prime2000.35"] < 1.01 and m["prime2000.35"] < m["prime2000.45"] < 1.1,
    ),
    Claim(
        PAPER,
        "Fig. 2a",
        "prime 5000 at 15 VMs",
        "affected earlier than prime 3000",
        "cloudscope-fig2",
        "prime5000.15",
        "x",
        direction=lambda m: all(m[f"prime5000.{n}"] > m[f"prime3000.{n}"] for n in (15, 25, 35, 45)),
    ),
    *(_dom0_small_blocks(n, cause) for n, cause in DOM0_SMALL_BLOCKS.items()),
    Claim(
        PAPER,
        "Fig. 2b",
        "total read, 5 VMs, 64 KB over 32 KB",
        "disk-bound at 32-128 KB",
        "cloudscope-fig2",
        "disk5.read.65536",
        "MB/s",
        direction=lambda m: m["disk5.read.32768"] < m["disk5.read.65536"] < 1.1 * m["disk5.read.32768"],
    ),
    Claim(
        PAPER,
        "Fig. 2b",
        "total read, 2 VMs at 256 KB",
        "drops from 256 KB for 2 VMs",
        "cloudscope-fig2",
        "disk2.read.262144",
        "MB/s",
        direction=lambda m: m["disk2.read.262144"] < 0.8 * m["disk2.read.131072"],
    ),
    Claim(
        PAPER,
        "Fig. 2b",
        "total read, 5 VMs at 128 KB",
        "no drop before 256 KB for 5 VMs",
        "cloudscope-fig2",
        "disk5.read.131072",
        "MB/s",
        direction=lambda m: m["disk5.read.131072"] > 0.8 * m["disk5.read.65536"],
        cause="each outstanding request holds size / 4 KB grant entries, so five guests fill the 128 entries "
        "from 128 KB, as the paper's own arithmetic (256 KB / 4 KB x 2 = 128) implies for more guests",
    ),
    Claim(
        PAPER,
        "Fig. 2b",
        "Dom0 busy at 256-512 KB, 5 VMs",
        "30-40 %",
        "cloudscope-fig2",
        "disk5.dom0_large",
        "%",
        target=35,
        tolerance=5,
        cause="a stalled grant-table refill waits (2 ms) without spending Dom0 CPU; the paper's Dom0 stays busy",
    ),
    Claim(
        PAPER,
        "Fig. 2c",
        "each VM's throughput with 10 VMs, relative to one",
        "falls as VMs are added",
        "cloudscope-fig2",
        "net.per_vm.10",
        "x",
        direction=lambda m: _rising(m, [f"net.per_vm.{n}" for n in range(10, 0, -1)]) and m["net.per_vm.10"] < 1,
    ),
    Claim(
        PAPER,
        "Fig. 2c",
        "Dom0 busy with 10 VMs",
        "rises as VMs are added",
        "cloudscope-fig2",
        "net.dom0.10",
        "%",
        direction=lambda m: _rising(m, [f"net.dom0.{n}" for n in range(1, 11)]) and m["net.dom0.10"] > m["net.dom0.1"],
    ),
    _model("Fig. 5a", "prime 3000", 10.5, "cloudscope-fig2", "err5a.prime3000", HT_UNSEEN),
    _model("Fig. 5a", "prime 5000", 3.8, "cloudscope-fig2", "err5a.prime5000", HT_UNSEEN),
    *(
        _model(
            "Fig. 5b",
            f"disk, {n} VMs",
            7.4,
            "cloudscope-fig2",
            f"err5b.{n}vm",
            "Eq. 3's disk term sees the queue, not the grant table's stalls, which set the 256 KB drop",
        )
        for n in (2, 5, 10)
    ),
    _model(
        "Fig. 5c",
        "network",
        4.8,
        "cloudscope-fig2",
        "err5c",
        "gamma_net counts the port as one state of three, so a port shared by ten VMs reads as a third of the "
        "slowdown measured",
    ),
    _model(
        "Fig. 6a",
        "mixed, disk",
        8.3,
        "cloudscope-fig6",
        "err6a",
        "a full grant table stalls requests far more than Eq. 3 predicts",
    ),
    _model("Fig. 6b", "mixed, network", 18.4, "cloudscope-fig6", "err6b", ""),
    Claim(
        PAPER,
        "Fig. 6",
        "std-cpu's slowdown with 20 co-residents",
        "no obvious degradation",
        "cloudscope-fig6",
        "cpu_slowdown_max",
        "%",
        direction=lambda m: m["cpu_slowdown_max"] < 1,
    ),
    _model("Fig. 7", "Hadoop map phase", 10.4, "cloudscope-fig7", "err7.map", HT_UNSEEN),
    _model("Fig. 7", "Hadoop reduce phase", 11.9, "cloudscope-fig7", "err7.reduce", HT_UNSEEN),
    *(_fig8(group, *judged) for group, judged in FIG8.items()),
    Claim(
        PAPER,
        "Fig. 9",
        "throughput with Dom0 weight 512 over 256",
        "+28.8 %",
        "cloudscope-fig9",
        "gain.512",
        "%",
        target=28.8,
        tolerance=10,
        direction=lambda m: m["gain.512"] > 5,
        cause=DOM0_UNDER,
    ),
    Claim(
        PAPER,
        "Fig. 9",
        "weight changes made by the adaptive Dom0",
        "raises the weight (to > 425)",
        "cloudscope-fig9",
        "adaptive_actions",
        direction=lambda m: m["adaptive_actions"] >= 1,
        cause="Eq. 5 finds the port oversubscribed five times, so even p_Dom0 = 1 misses the SLO and Eq. 7-8 ask "
        "for no weight",
    ),
]
