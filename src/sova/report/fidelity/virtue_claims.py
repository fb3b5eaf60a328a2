"""The Virtue paper's Figs. 4-7 and Table III as experiments and claims (scenarios/papers/virtue/, each with
its own trial count): gains are per cent over each trial's Random placement, medians over the trials."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sova.control.profiles import check_profile
from sova.experiments.trials import RANDOM, run_trials
from sova.model.sweep import load_runs, load_scenario
from sova.report.fidelity.claims import Claim, Experiment, Metrics
from sova.report.fidelity.paper_runs import PAPERS, timed
from sova.report.trials_report import profile_stats

PAPER = "Virtue"
FIG7_WEB = {"sa-c": -9, "sa-cntm": 10, "sa-all": 55, "greedy-net": 39, "greedy-fill": 74}
LABELS = {
    "sa-c": "SA C",
    "sa-cntm": "SA CNTM",
    "sa-all": "SA All",
    "greedy-net": "Greedy Net",
    "greedy-fill": "Greedy Fill",
    "model": "Model",
}
TABLE3 = {
    (100, 4): 129,
    (250, 4): 70,
    (500, 4): 57,
    (750, 4): 37,
    (100, 2): 69,
    (250, 2): 38,
    (500, 2): 33,
    (750, 2): 34,
    (100, 1): 58,
    (250, 1): 41,
}  # Greedy Fill's web gain (%) by edge Mb/s, oversubscription


def _trials(root: Path, name: str) -> tuple[list, list[str]]:
    scenario = load_scenario(root / PAPERS / "virtue" / name, check_profile)
    profiles = [p for p in scenario.profiles if p != RANDOM]
    with timed(f"virtue/{name}"):
        return run_trials(scenario, [RANDOM, *profiles]), profiles


def _gains(runs: list, profiles: list[str], key: str) -> Metrics:
    """Per profile: its median over the Random placements' median, minus one, in per cent."""
    stats = profile_stats(runs, profiles)
    return {f"{key}.{p}": 100 * (stats[p][key]["median_vs_random_median"] - 1) for p in profiles if key in stats[p]}


def measure_web_hadoop(root: Path) -> Metrics:
    web = _gains(*_trials(root, "web-20.toml"), "web")
    job = _gains(*_trials(root, "hadoop-20.toml"), "job")
    return {f"fig4.{k}": v for k, v in web.items()} | {f"fig5.{k}": v for k, v in job.items()}


def measure_multi_tenant(root: Path) -> Metrics:
    runs, profiles = _trials(root, "multi-tenant-120.toml")
    return _gains(runs, profiles, "web") | _gains(runs, profiles, "job")


def measure_iterations(root: Path) -> Metrics:
    """Fig. 6: each round's median web throughput over the first Random placement's, rounds 1 and 4."""
    runs, profiles = _trials(root, "iterations.toml")
    first = {r.trial: r.outcome.web_rps for r in runs if r.profile == RANDOM}
    metrics = {}
    for profile in profiles:
        by_round = {}
        for r in runs:
            if r.profile == profile:
                by_round.setdefault(r.iteration, []).append(r.outcome.web_rps / first[r.trial])
        rounds = sorted(by_round)
        metrics[f"{profile}.gain_1_to_4"] = 100 * (np.median(by_round[rounds[-1]]) / np.median(by_round[rounds[0]]) - 1)
    return metrics


def measure_table3(root: Path) -> Metrics:
    """Greedy Fill's median gain per edge rate and oversubscription (the file's lockstep sweep)."""
    spec, scenarios = load_runs(root / PAPERS / "virtue" / "table3-links.toml", check_profile)
    oversubscription = spec.lockstep[0].values  # the ToR's; the aggregation's is the same
    metrics = {}
    with timed("virtue/table3-links.toml"):
        runs = [run_trials(scenario, [RANDOM, "greedy-fill"]) for scenario in scenarios]
    for speed, over, trial_runs in zip(spec.values, oversubscription, runs, strict=True):
        stats = profile_stats(trial_runs, ["greedy-fill"])
        metrics[f"gain.{int(speed.removesuffix('Mbps'))}.{over}"] = 100 * (
            stats["greedy-fill"]["web"]["relative_median"] - 1
        )
    return metrics


EXPERIMENTS = [
    Experiment("virtue-web-hadoop", ("virtue/web-20.toml", "virtue/hadoop-20.toml"), measure_web_hadoop),
    Experiment("virtue-multi-tenant", ("virtue/multi-tenant-120.toml",), measure_multi_tenant),
    Experiment("virtue-iterations", ("virtue/iterations.toml",), measure_iterations),
    Experiment("virtue-table3", ("virtue/table3-links.toml",), measure_table3),
]

LARGER_GAINS = (
    "co-location gains more here than on the paper's servers: a web VM beside its client serves at its CPU's "
    "pace (1 ms a request: up to 1,000 req/s) where a 100 Mb/s NIC carries 340 req/s of 33.66 kB pages, and "
    "the paper gives neither its same-server bandwidth nor its CPU per request (docs/placement.md); sharing "
    "per TCP connection brought the multi-tenant gains within 1.5 times the paper's"
)
HIDDEN_DEMAND = (
    "each new measurement finds the links of the improved placement saturated again, so the demand behind them "
    "stays hidden and the next round has little to move (docs/placement.md)"
)
CPU_BOUND = (
    "every web VM is held by its CPU (1 ms per request) at fast links, so no placement helps (docs/placement.md)"
)


def _gain(figure: str, quantity: str, paper_says: str, experiment: str, metric: str, paper: float, **judged) -> Claim:
    """A gain in per cent over Random: within half the paper's gain agrees; `judged`: direction and cause."""
    return Claim(
        PAPER, figure, quantity, paper_says, experiment, metric, "%", target=paper, tolerance=abs(paper) / 2, **judged
    )


def _table3_claim(edge: int, over: int, paper: int) -> Claim:
    oversubscription = {4: "a 16:1 core", 2: "a 4:1 core", 1: "no oversubscription"}[over]
    metric = f"gain.{edge}.{over}"
    return _gain(
        "Table III",
        f"Greedy Fill's web gain, {edge} Mb/s edge, {oversubscription}",
        f"{paper} %",
        "virtue-table3",
        metric,
        paper,
        direction=lambda m: m[metric] > 0,
        cause=lambda m: LARGER_GAINS if m[metric] > paper else CPU_BOUND,
    )


def _fig7_web(name: str, paper: int) -> Claim:
    metric = f"web.{name}"
    return _gain(
        "Fig. 7",
        f"multi-tenant web, {LABELS[name]}'s gain",
        f"{paper:+d} %",
        "virtue-multi-tenant",
        metric,
        paper,
        direction=lambda m: (m[metric] > 5) == (paper > 5),
        cause=LARGER_GAINS,
    )


def _fig6(name: str, paper_says: str, paper: float) -> Claim:
    metric = f"{name}.gain_1_to_4"
    quantity = f"{LABELS[name]}, round 1 to 4"
    return _gain(
        "Fig. 6",
        quantity,
        paper_says,
        "virtue-iterations",
        metric,
        paper,
        direction=lambda m: m[metric] >= 0,
        cause=lambda m: HIDDEN_DEMAND if m[metric] < paper else "",  # a larger gain: not yet measured
    )


CLAIMS = [
    _gain(
        "Fig. 4",
        "web, SA C's gain",
        "-9 %",
        "virtue-web-hadoop",
        "fig4.web.sa-c",
        -9,
        direction=lambda m: m["fig4.web.sa-c"] < 5,
    ),
    _gain(
        "Fig. 4",
        "web, Greedy Fill's gain",
        "best, up to +42 %",
        "virtue-web-hadoop",
        "fig4.web.greedy-fill",
        42,
        direction=lambda m: m["fig4.web.greedy-fill"] >= max(v for k, v in m.items() if k.startswith("fig4.")) - 1,
        cause=LARGER_GAINS,
    ),
    _gain(
        "Fig. 5",
        "Hadoop, Greedy Fill's gain",
        "at most 17 %",
        "virtue-web-hadoop",
        "fig5.job.greedy-fill",
        17,
        direction=lambda m: m["fig5.job.greedy-fill"] > 0,
    ),
    *(_fig7_web(name, paper) for name, paper in FIG7_WEB.items()),
    _gain(
        "Fig. 7",
        "multi-tenant Hadoop, Greedy Fill's gain",
        "+9 %",
        "virtue-multi-tenant",
        "job.greedy-fill",
        9,
        direction=lambda m: m["job.greedy-fill"] > 0,
    ),
    _fig6("sa-all", "+10 %", 10),
    _fig6("model", "+5 %, then nothing", 5),
    *(_table3_claim(edge, over, paper) for (edge, over), paper in TABLE3.items()),
]
