"""The run-time estimate given before a run: simulated steps, the optimizers' bound, and its wording."""

import pytest

from helpers import make_scenario
from sova.experiments.estimate import ANNEALING_STEP_SECONDS, describe, optimizer_seconds, simulated_steps, wall_seconds


def _trials(profiles: dict, count: int = 10, iterations: int = 1):
    return make_scenario(
        scenario={"duration": 100},
        topology={"kind": "three-tier", "racks": 2, "hosts_per_rack": 2},
        trials={"count": count, "iterations": iterations},
        hosts=[{"name": "h{i}", "count": 4}],
        vms=[{"name": "v{i}", "count": 4}],
        profiles=profiles,
    )


def test_a_run_simulates_every_profile_and_trials_each_placement():
    plain = make_scenario(scenario={"duration": 100}, profiles={"a": {}, "b": {}})
    assert simulated_steps([plain], ["a", "b"]) == 200
    assert simulated_steps([plain, plain], ["a"]) == 200  # two sweep values
    trials = _trials({"random": {}, "gf": {"policies": ["greedy-fill"]}}, count=10, iterations=2)
    assert simulated_steps([trials], ["random", "gf"]) == 10 * 100 * (1 + 2 * 2)


def test_optimizers_count_their_time_limit_or_their_annealing_steps():
    trials = _trials(
        {
            "model": {"policies": ["model"], "params": {"model": {"time_limit": "5s"}}},
            "sa": {"policies": ["sa-all"], "params": {"sa-all": {"steps": 1000}}},
            "gf": {"policies": ["greedy-fill"]},
        },
        count=10,
    )
    assert optimizer_seconds([trials], ["model"]) == pytest.approx(10 * 5.0)
    assert optimizer_seconds([trials], ["sa"]) == pytest.approx(10 * 1000 * ANNEALING_STEP_SECONDS)
    assert optimizer_seconds([trials], ["gf"]) == 0
    # trials divide over processes
    assert wall_seconds([trials], ["model"], jobs=2) == pytest.approx(wall_seconds([trials], ["model"], jobs=1) / 2)


def test_a_cycle_of_a_placement_policy_counts_once_per_cycle():
    run = make_scenario(
        scenario={"duration": "1h"},
        topology={"kind": "three-tier", "racks": 2, "hosts_per_rack": 2},
        hosts=[{"name": "h{i}", "count": 4}],
        profiles={"model": {"policies": ["model"], "params": {"model": {"cycle": "10min", "time_limit": 60}}}},
    )
    assert optimizer_seconds([run], ["model"]) == pytest.approx(6 * 60.0)


@pytest.mark.parametrize(
    ("seconds", "text"), [(40, "40 s"), (600, "10 min"), (3 * 3600, "3.0 h"), (5 * 86400, "5.0 days")]
)
def test_durations_read_as_a_person_says_them(seconds, text):
    assert describe(seconds) == text
