"""Profiles and sweep values run in processes (--workers) and on a Dask cluster (--cluster) give a serial
run's results; the cluster is a real local Dask cluster the test starts."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from helpers import make_scenario
from sova.cli import main
from sova.experiments.parallel import run_all
from sova.experiments.scenario_runs import run_study

TIMING = ("wall_seconds", "speed")


def scenario():
    return make_scenario(
        scenario={"duration": 1800, "step": 300},
        hosts=[{"name": "h{i}", "count": 3, "cores": 2, "power_model": "hp-ml110-g5", "sleep_power": 0.0}],
        vms=[{"name": "vm{i}", "count": 4, "host": "first-fit", "vcpus": 1, "memory": 1024}],
        workloads=[{"vm": "vm*", "kind": "lookbusy", "duty": 0.5, "period": 600, "util": 0.9}],
        profiles={
            "dvfs": {"policies": ["host-standby"]},
            "thr": {"policies": ["power-aware", "host-standby"], "params": {"power-aware": {"selection": "rs"}}},
            "npa": {"simulator": {"power_follows_load": False}},
        },
    )


def comparable(results) -> list[dict]:
    return [
        {**{k: v for k, v in r.summary.items() if k not in TIMING}, "audit": [asdict(e) for e in r.audit.entries]}
        for r in results
    ]


def square(x: int) -> int:
    return x * x


def test_run_all_keeps_the_items_order_in_processes_and_counts_each_run_done():
    seen = []
    assert run_all(square, list(range(7)), workers=2, done=seen.append) == [x * x for x in range(7)]
    assert seen == list(range(1, 8))


def test_profiles_in_two_processes_give_the_serial_runs_results():
    sc = scenario()
    serial = run_study([sc], list(sc.profiles))
    parallel = run_study([sc], list(sc.profiles), workers=2)
    assert comparable(parallel[0]) == comparable(serial[0])
    assert serial[0][1].summary["migrations"]["count"] > 0  # the comparison covers migrations too


def test_a_local_dask_cluster_gives_the_serial_runs_results():
    distributed = pytest.importorskip("distributed")
    sc = scenario()
    serial = run_study([sc], list(sc.profiles))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:  # fmt: skip
        done = []
        on_cluster = run_study([sc], list(sc.profiles), cluster=cluster.scheduler_address, done=done.append)
    assert comparable(on_cluster[0]) == comparable(serial[0]) and done == [1, 2, 3]


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text('[scenario]\nname = "s"\nduration = 10\n[[hosts]]\nname = "h1"\n')
    assert main(["run", str(path), "--cluster", "tcp://127.0.0.1:9", "--out", str(tmp_path / "o"), "--quiet"]) == 1
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in capsys.readouterr().err
    assert not (tmp_path / "o" / "summary.json").exists()


def test_sova_run_with_workers_writes_the_serial_runs_summary(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(
        '[scenario]\nname = "s"\nduration = 600\nstep = 300\n[[hosts]]\nname = "h{i}"\ncount = 2\n'
        '[[vms]]\nname = "v{i}"\ncount = 2\n[[workloads]]\nvm = "v*"\nkind = "lookbusy"\nutil = 0.4\n'
        '[profiles.a]\npolicies = []\n[profiles.b]\npolicies = ["host-standby"]\n'
    )
    for out, extra in (("serial", []), ("two", ["--workers", "2"])):
        assert main(["run", str(path), "--out", str(tmp_path / out), "--quiet", *extra]) == 0
    serial, two = (json.loads((tmp_path / d / "summary.json").read_text())["profiles"] for d in ("serial", "two"))
    for name in ("a", "b"):
        assert {k: v for k, v in two[name].items() if k not in TIMING} == {
            k: v for k, v in serial[name].items() if k not in TIMING
        }
