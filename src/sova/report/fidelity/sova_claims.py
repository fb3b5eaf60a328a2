"""The Sova paper's Tables 1-3 and §5.3-5.4 as experiments and claims (scenarios/papers/sova/)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sova.control.profiles import check_profile
from sova.experiments.scenario_runs import run_scenario
from sova.model.sweep import load_scenario
from sova.report.fidelity.claims import Claim, Experiment, Metrics
from sova.report.fidelity.paper_runs import PAPERS, sweep, timed

PAPER = "Sova"
SRIOV_TABLE2_CPU = (81.4, 60.0, 45.5, 23.6, 7.8)  # the SR-IOV paper's lookbusy VMs, which Table 1 reuses
TABLE1_NF = {"netperf": (0.056, 0.237, 0.285, 0.743, 0.952), "hybrid": (0.081, 0.139, 0.226, 0.945, 0.936)}
TABLE2 = {9.9: ["vm1", "vm6", "vm7", "vm8"], 19.9: ["vm1", "vm3", "vm5", "vm6"], 29.9: ["vm1", "vm4", "vm5", "vm6"]}
SEEDS = range(1, 7)


def _run(root: Path, name: str, profiles: list[str] | None = None, seed: int | None = None):
    scenario = load_scenario(root / PAPERS / "sova" / name, check_profile)
    with timed(f"sova/{name}"):
        return run_scenario(scenario, profiles, seed=seed)


def measure_tables(root: Path) -> Metrics:
    (table1,) = _run(root, "table1-intensity.toml")
    factors = table1.summary["intensity"]
    io_degree = [factors[f"vm{i}"]["io_degree"] for i in range(1, 6)]
    nf = {
        kind: [factors[f"vm{i}"]["NF"] for i in range(first, first + 5)]
        for kind, first in (("netperf", 6), ("hybrid", 11))
    }
    if_cpu, if_net = ([factors[f"vm{i}"]["IF"] for i in range(first, first + 5)] for first in (1, 6))
    metrics = {
        "io_degree_error": float(np.mean(np.abs(np.array(io_degree) - SRIOV_TABLE2_CPU))),
        "nf_rising": float(nf["netperf"] == sorted(nf["netperf"]) and nf["netperf"][0] < nf["netperf"][-1]),
        "if_cpu_below_net": float(max(if_cpu) < min(if_net)),
    }
    for kind, paper in TABLE1_NF.items():
        metrics[f"nf_error.{kind}"] = float(np.mean(np.abs(np.array(nf[kind]) - paper)))
    matched = []
    for seed in SEEDS[:3]:
        (run,) = _run(root, "table2-vf-scheduling.toml", ["dsriov"], seed)
        matched += [run.vf_holders(60 * minute) == holders for minute, holders in TABLE2.items()]
    metrics["table2_matched"] = 100 * float(np.mean(matched))
    stages = [_table3_stages(_run(root, "table3-migration.toml", ["sova"], seed)[0].migrations) for seed in SEEDS]
    metrics["table3_stages_seed1"] = float(stages[0])
    metrics["table3_stages_mean"] = float(np.mean(stages))
    return metrics


def _table3_stages(migrations) -> int:
    """How many of Table 3's three stages come out: VM1 HM1 -> HM3 in the first ten minutes, nothing in the
    second, VM1 HM3 -> HM2 in the third."""
    moves = [(m.vm.lower(), m.src.lower(), m.dst.lower(), m.started // 600) for m in migrations if m.moved]
    first = [m[:3] for m in moves if m[3] == 0] == [("vm1", "hm1", "hm3")]
    second = not [m for m in moves if m[3] == 1]
    third = [m[:3] for m in moves if m[3] == 2] == [("vm1", "hm3", "hm2")]
    return int(first) + int(second) + int(third)


def measure_sec53(root: Path) -> Metrics:
    """When VM3's VF goes to VM1 and when VM1 moves to HM2, the mean over seeds 1-6."""
    handover, moved = [], []
    for seed in SEEDS:
        (run,) = _run(root, "sec53-combination.toml", ["sova"], seed)
        handover.append(next(t for t, vm, _, event in run.vf_events if vm == "VM1" and event == "attached"))
        moved.append(next(m.started for m in run.migrations if m.vm == "VM1"))
    return {"handover_s": float(np.mean(handover)), "migration_s": float(np.mean(moved))}


def measure_sec54(root: Path) -> Metrics:
    runs = sweep(root, "sova/sec54-overall.toml")
    metrics = {
        f"{p}.{rate}": 1e3 * s["services"]["response_mean"]
        for rate, profiles in runs.items()
        if rate in (1000, 1200, 1400)
        for p, s in profiles.items()
    }
    metrics["sova_over_best.1400"] = metrics["sova.1400"] / min(metrics[f"{p}.1400"] for p in ("dsriov", "vlm"))
    return metrics


EXPERIMENTS = [
    Experiment(
        "sova-tables",
        ("sova/table1-intensity.toml", "sova/table2-vf-scheduling.toml", "sova/table3-migration.toml"),
        measure_tables,
        quick=True,
    ),
    Experiment("sova-sec53", ("sova/sec53-combination.toml",), measure_sec53, quick=True),
    Experiment("sova-sec54", ("sova/sec54-overall.toml",), measure_sec54),
]

TABLE3_COLD = (
    "on the paper's Xen hosts each netperf stream is held to its vif's netback thread (4.94 Gb/s, 52 % of the "
    "port), so co-located loads add as §5.2 counts them but reach 0.525 of the paper's sums (stage 1: HM1 0.42 "
    "against 0.8), and no host crosses alpha = 0.7; the paper's stages need every stream to fill the port with "
    "no two on-times overlapping (docs/policies.md)"
)
NF_SHAPE = (
    "NF here rises about linearly with the share of time netperf runs (0.28, 0.44, 0.62, 0.80, 0.96), where the "
    "paper's jumps between 60 % and 80 % (0.285 to 0.743); NF's weight epsilon (0.9) is a choice, the paper gives "
    "none (docs/policies.md)"
)


def _table3(runs: str, metric: str) -> Claim:
    """How many of Table 3's stages come out: all three agree, two keep the direction."""
    return Claim(
        PAPER,
        "Table 3",
        f"stages as the paper's (of 3), {runs}",
        "3",
        "sova-tables",
        metric,
        target=3,
        tolerance=0,
        direction=lambda m: m[metric] >= 2,
        cause=TABLE3_COLD,
    )


CLAIMS = [
    Claim(
        PAPER,
        "Table 1",
        "lookbusy VMs' IO degree, mean distance from the SR-IOV paper's CPU column",
        "81.4 / 60.0 / 45.5 / 23.6 / 7.8",
        "sova-tables",
        "io_degree_error",
        "pts",
        bound=lambda v: v <= 10,
    ),
    Claim(
        PAPER,
        "Table 1",
        "netperf VMs' NF, mean distance from the paper's",
        "0.056 / 0.237 / 0.285 / 0.743 / 0.952",
        "sova-tables",
        "nf_error.netperf",
        bound=lambda v: v <= 0.1,
        direction=lambda m: m["nf_rising"] == 1,
        cause=NF_SHAPE,
    ),
    Claim(
        PAPER,
        "Table 1",
        "hybrid VMs' NF, mean distance from the paper's",
        "0.081 / 0.139 / 0.226 / 0.945 / 0.936",
        "sova-tables",
        "nf_error.hybrid",
        bound=lambda v: v <= 0.1,
        cause=NF_SHAPE,
    ),
    Claim(
        PAPER,
        "Table 1",
        "every CPU-only VM's IF below every netperf VM's (1: yes)",
        "always smaller",
        "sova-tables",
        "if_cpu_below_net",
        direction=lambda m: m["if_cpu_below_net"] == 1,
    ),
    Claim(
        PAPER,
        "Table 2",
        "VF holders as the paper's at 10, 20, 30 min (seeds 1-3)",
        "100 %",
        "sova-tables",
        "table2_matched",
        "%",
        target=100,
        tolerance=0,
    ),
    *(
        _table3(runs, metric)
        for runs, metric in (("seed 1", "table3_stages_seed1"), ("mean of seeds 1-6", "table3_stages_mean"))
    ),
    Claim(
        PAPER,
        "§5.3, Fig. 6",
        "VM3's VF handed to VM1 (mean of seeds 1-6)",
        "140 s",
        "sova-sec53",
        "handover_s",
        "s",
        target=140,
        tolerance=0.15,
    ),
    Claim(
        PAPER,
        "§5.3, Fig. 6",
        "VM1 migrates to HM2 (mean of seeds 1-6)",
        "290 s",
        "sova-sec53",
        "migration_s",
        "s",
        target=290,
        tolerance=0.15,
        direction=lambda m: m["migration_s"] > m["handover_s"],
    ),
    Claim(
        PAPER,
        "§5.4, Fig. 7",
        "DSR-IOV's mean response at 1,000 req/s",
        "below default's",
        "sova-sec54",
        "dsriov.1000",
        "ms",
        direction=lambda m: m["dsriov.1000"] < m["default.1000"],
    ),
    Claim(
        PAPER,
        "§5.4, Fig. 7",
        "VLM's mean response at 1,400 req/s",
        "below DSR-IOV's once HM1 saturates",
        "sova-sec54",
        "vlm.1400",
        "ms",
        direction=lambda m: m["vlm.1400"] < m["dsriov.1400"],
    ),
    Claim(
        PAPER,
        "§5.4, Fig. 7",
        "Sova's mean response at 1,400 req/s over the best of DSR-IOV and VLM",
        "within 5 %",
        "sova-sec54",
        "sova_over_best.1400",
        "x",
        target=1.0,
        tolerance=0.05,
        direction=lambda m: m["sova.1400"] < m["default.1400"],
        cause="above about 1,240 req/s the client host must receive more than 10 GbE carries, so every profile "
        "saturates and the differences are noise (docs/policies.md)",
    ),
]
