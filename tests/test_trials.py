"""Trials (Virtue's method): Random placements re-placed by every profile, each result run."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy.sparse import csr_matrix

from helpers import make_scenario
from sova.cli import main
from sova.experiments.trials import PlacementOutcome, TrialRun, check_trials, run_trials
from sova.model.scenario import TopologySpec
from sova.model.schema import InputError
from sova.plan.placement.fabric import levels_for
from sova.plan.placement.greedy_net import greedy_net
from sova.plan.placement.minimax import Evaluator
from sova.plan.placement.problem import PlacementProblem
from sova.report.trials_report import profile_stats

TOPOLOGY = {
    "kind": "three-tier",
    "racks": 2,
    "hosts_per_rack": 4,
    "racks_per_agg": 2,
    "tor_oversubscription": 4,
    "link_speed": "100Mbps",
}


def trials_scenario(profiles: dict, count: int = 3):
    return make_scenario(
        scenario={"duration": 30, "seed": 7},
        topology=TOPOLOGY,
        trials={"count": count, "warmup": "5s"},
        hosts=[{"name": "pm{i}", "count": 8, "cores": 4, "memory": "6GiB", "dom0_memory": "4GiB"}],
        vms=[
            {"name": "cli{i}", "count": 2, "host": "random", "memory": "512MiB"},
            {"name": "web{i}", "count": 2, "host": "random", "memory": "512MiB"},
            {"name": "mc{i}", "count": 2, "host": "random", "memory": "512MiB"},
        ],
        workloads=[{"vm": "cli*", "kind": "web", "web": "web*", "cache": "mc*"}],
        profiles=profiles,
    )


PROFILES = {"random": {"policies": []}, "greedy-fill": {"policies": ["greedy-fill"]}}


def test_trials_start_every_profile_from_the_same_seeded_random_placements_in_one_process_or_two():
    sc = trials_scenario(PROFILES)
    runs = run_trials(sc, jobs=1)
    again = run_trials(sc, jobs=2)  # in two processes: the same trials, in the same order
    assert [r.outcome for r in runs] == [r.outcome for r in again]
    assert [(r.trial, r.profile, r.iteration) for r in runs] == [
        (k, p, i) for k in range(3) for p, i in (("random", 0), ("greedy-fill", 1))
    ]
    # three different Random placements, each re-placed by Greedy Fill to no worse an objective
    base = [r for r in runs if r.profile == "random"]
    assert len({r.outcome.web_rps for r in base}) > 1
    for r, b in zip([r for r in runs if r.profile == "greedy-fill"], base, strict=True):
        assert r.objective <= b.objective + 1e-9
        assert r.outcome.web_rps > b.outcome.web_rps


def test_trials_refuse_a_profile_that_is_not_a_placement_algorithm():
    sc = trials_scenario({**PROFILES, "hot": {"policies": ["sandpiper"]}})
    with pytest.raises(InputError) as e:
        check_trials(sc, list(sc.profiles))
    assert "[profiles.hot].policies" in str(e.value)


def test_random_hosts_are_seeded_and_respect_memory():
    a = trials_scenario(PROFILES)
    b = trials_scenario(PROFILES)
    hosts = [v.host for v in a.vms]
    assert hosts == [v.host for v in b.vms]
    assert max(hosts.count(h) for h in set(hosts)) <= 4  # 2 GiB free per host, 512 MiB per VM


def write_trials_toml(path, count: int, extra: str = ""):
    topo = "\n".join(f"{k} = {v!r}".replace("'", '"') for k, v in TOPOLOGY.items())
    vms = "".join(f'[[vms]]\nname = "{n}{{i}}"\ncount = 2\n' for n in ("cli", "web", "mc"))
    path.write_text(
        f"""[scenario]\nname = "t"\nduration = 30\nseed = 7\n[trials]\ncount = {count}\nwarmup = "5s"\n
[topology]\n{topo}\n[[hosts]]\nname = "pm{{i}}"\ncount = 8\ncores = 4\n{vms}
[[workloads]]\nvm = "cli*"\nkind = "web"\nweb = "web*"\ncache = "mc*"
[profiles.random]\npolicies = []\n[profiles.greedy-fill]\npolicies = ["greedy-fill"]\n{extra}""",
        encoding="utf-8",
    )


def test_sova_run_of_trials_writes_the_box_plots_and_a_summary(tmp_path):
    sc_path = tmp_path / "t.toml"
    write_trials_toml(sc_path, 2)
    out = tmp_path / "out"
    assert main(["run", str(sc_path), "--out", str(out), "--quiet", "--jobs", "1"]) == 0
    doc = json.loads((out / "summary.json").read_text())
    stats = doc["values"][0]["stats"]
    assert stats["greedy-fill"]["web"]["relative_median"] > 1.0
    assert (out / "box_web.png").stat().st_size > 0 and (out / "cdf_web.png").stat().st_size > 0
    # the runs as one tidy table, the same rows as trials.csv
    table = pq.read_table(out / "trials.parquet").to_pylist()
    assert len(table) == 2 * 2 and not (out / "trials.csv").exists()  # CSV on request
    assert {(row["scenario"], row["seed"], row["profile"]) for row in table} == {
        ("t", 7, "random"),
        ("t", 7, "greedy-fill"),
    }
    assert all(row["web_rps"] > 0 for row in table)


def test_a_swept_trial_set_reports_each_value_and_draws_table_iii(tmp_path):
    sc_path = tmp_path / "t.toml"
    sweep = """[[sweep]]\ntable = "topology"\nkey = "link_speed"\nvalues = ["100Mbps", "1Gbps"]
[[sweep]]\ntable = "topology"\nkey = "tor_oversubscription"\nvalues = [4, 1]\n"""
    write_trials_toml(sc_path, 1, sweep)
    out = tmp_path / "out"
    assert main(["run", str(sc_path), "--out", str(out), "--quiet", "--jobs", "1"]) == 0
    doc = json.loads((out / "summary.json").read_text())
    assert [v["value"] for v in doc["values"]] == ["100Mbps", "1Gbps"]
    assert [x["key"] for x in doc["sweep"]] == ["link_speed", "tor_oversubscription"]
    gains = [v["stats"]["greedy-fill"]["web"]["relative_median"] for v in doc["values"]]
    assert gains[0] > gains[1] >= 0.999  # the slow oversubscribed fabric leaves the most to gain
    assert (out / "sweep_web.png").stat().st_size > 0
    assert "tor_oversubscription" in (out / "report.html").read_text()
    rows = pq.read_table(out / "trials.parquet").to_pylist()
    assert sorted({row["link_speed"] for row in rows}) == ["100Mbps", "1Gbps"]  # the swept key by its name


def test_tenant_stats_count_the_tenant_placement_pairs_that_improved():
    def run(trial, profile, a, b):
        return TrialRun(
            trial, profile, int(profile != "random"), PlacementOutcome(a + b, {"s1": a, "s2": b}, None, 0), 1.0, 0, 0
        )

    runs = [
        run(0, "random", 100, 100),
        run(0, "sa-all", 150, 90),
        run(1, "random", 100, 50),
        run(1, "sa-all", 120, 100),
    ]
    tenants = profile_stats(runs, ["random", "sa-all"])["sa-all"]["web_tenants"]
    assert tenants["pairs_improved"] == 0.75  # s1 twice and s2 once of the four pairs
    assert tenants["by_tenant"]["s2"] == {"relative_median": pytest.approx((0.9 + 2.0) / 2), "improved": 0.5}


def test_greedy_net_works_through_links_tied_at_the_maximum():
    # two pairs across two racks; every host link and both ToR links carry the same (saturated) load
    spec = TopologySpec(kind="three-tier", racks=2, hosts_per_rack=2, racks_per_agg=2, link_speed=100e6)
    t = np.zeros((4, 4))
    t[0, 2] = t[1, 3] = 90e6
    p = PlacementProblem(
        vm_names=("a1", "a2", "b1", "b2"),
        host_names=("h0", "h1", "h2", "h3"),
        cpu=np.zeros(4),
        host_cores=np.full(4, 4.0),
        traffic=csr_matrix(t),
        levels=levels_for(spec, 4),
    )
    x0 = np.array([0, 1, 2, 3])
    x = greedy_net(p, x0)
    assert Evaluator(p, "links", x0).value() == pytest.approx(0.9)
    assert Evaluator(p, "links", x).value() == pytest.approx(0.0)
    assert x[0] == x[2] and x[1] == x[3]
