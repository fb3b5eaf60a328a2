"""The power-aware consolidation policy in the simulator: an overloaded host is relieved (THR, MMT) and
the least loaded host is emptied, as worked out by hand; every detector and selection runs."""

from __future__ import annotations

import pytest

from helpers import make_scenario
from sova.experiments.scenario_runs import run_profile


def cluster(params: dict):
    return make_scenario(
        scenario={"duration": 850},  # rounds at 300 and 600 s: none left running at the end
        hosts=[{"name": "h{i}", "count": 3, "cores": 4, "power_model": "hp-ml110-g4"}],
        vms=[
            {"name": "busy{i}", "count": 4, "host": "h1", "vcpus": 1, "memory": 1024},
            {"name": "light2", "host": "h2", "vcpus": 1, "memory": 1024},
            {"name": "light3", "host": "h3", "vcpus": 1, "memory": 1024},
        ],
        workloads=[
            {"vm": "busy*", "kind": "lookbusy", "duty": 1.0, "util": 1.0},
            {"vm": "light*", "kind": "lookbusy", "duty": 1.0, "util": 0.2},
        ],
        profiles={"pa": {"policies": ["power-aware"], "params": {"power-aware": params}}},
    )


def test_thr_mmt_relieves_the_overloaded_host_and_empties_the_least_loaded_one():
    result = run_profile(cluster({"detector": "thr", "threshold": 0.8, "selection": "mmt"}), "pa")
    moved = [(e.target, e.action.split("dst=")[1].split()[0]) for e in result.audit.entries if e.event == "finished"]
    # at 300 s: h1 at 100 % > 80 %: busy1 (the first of equal memories) leaves for h2 (a tie with h3: the
    # first); then h3 (5 %), the least loaded, is emptied onto h2, which the executor's rail of one migration
    # per host at a time holds back to the next round (600 s); h1 at 75 % and h2 at 35 % are then steady
    assert moved == [("busy1", "h2"), ("light3", "h2")]
    placement = result.summary["migrations"]
    assert placement["completed"] == 2 and placement["failed"] == 0


@pytest.mark.parametrize("detector", ["iqr", "mad", "lr", "lrr"])
@pytest.mark.parametrize("selection", ["mmt", "mc", "mu", "rs"])
def test_every_detector_and_selection_runs_and_relieves_the_hot_host(detector, selection):
    result = run_profile(cluster({"detector": detector, "selection": selection, "safety": 1.2}), "pa")
    # with a history shorter than its minimum, each falls back to THR at 70 %: h1 (100 %) is overloaded
    assert result.summary["migrations"]["completed"] >= 1 and result.summary["migrations"]["failed"] == 0
