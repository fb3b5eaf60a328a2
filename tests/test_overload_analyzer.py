"""The overload analyzer: each VM's CPU asked period by period from the Knowledge, each host judged by a
Beloglazov-Buyya detector with its evidence, the Knowledge kept as long as it reads, and power-aware's
migrations resting on its findings in the audit log."""

from __future__ import annotations

import pytest

from helpers import make_scenario
from sova.analyze.base import AnalyzeStage
from sova.analyze.cpu_asked import cpu_asked
from sova.analyze.overload import Overload
from sova.control.runtime import Runtime
from sova.drivers.sim import SimDriver
from sova.experiments.scenario_runs import run_profile
from sova.model.knowledge import Knowledge
from sova.model.scenario import ControlSpec
from sova.plan.power_aware import PowerAware
from sova.sim.engine import Simulator
from test_knowledge import _without

BUSY = {  # h1's four cores run three full burners and a half one; h2 runs one light VM
    "hosts": [{"name": "h1", "cores": 4}, {"name": "h2", "cores": 4}],
    "vms": [{"name": f"v{i}", "host": "h1"} for i in range(1, 5)] + [{"name": "light", "host": "h2"}],
    "workloads": [
        {"vm": "v[1-3]", "kind": "lookbusy"},
        {"vm": "v4", "kind": "lookbusy", "util": 0.5},
        {"vm": "light", "kind": "lookbusy", "util": 0.2},
    ],
}


def observed(seconds: int, arrives: str | None = None, at: int = 0) -> Knowledge:
    """A Knowledge of one snapshot a second (VM `arrives` reported only from time `at` on)."""
    sim = Simulator(make_scenario(**BUSY))
    driver = SimDriver(sim)
    knowledge = Knowledge(float("inf"))
    for t in range(seconds + 1):
        snap = driver.observe()
        knowledge.add(_without(snap, arrives) if arrives and t < at else snap)
        sim.step()
    return knowledge


def test_each_vm_has_the_cpu_it_asked_per_period_newest_last():
    knowledge = observed(40)
    found = cpu_asked(knowledge, period=10, length=6)
    mips = knowledge.latest.host_core_mips[0]  # the simulator's cores report their speed: CPU is in MIPS
    assert found.samples.tolist() == [4] * 5  # 40 s: four periods, the two oldest columns empty
    assert found.history[:, :2].tolist() == [[0.0, 0.0]] * 5
    for column in range(2, 6):
        assert found.history[:, column] / mips == pytest.approx([1.0, 1.0, 1.0, 0.5, 0.2], abs=0.01)


def test_a_vm_that_came_has_samples_only_since_and_zeros_before():
    found = cpu_asked(observed(40, arrives="light", at=25), period=10, length=4)
    light = 4
    # reported from 25 s: the windows ending at 40 and 30 s hold it, the one ending at 20 s does not
    assert found.samples[light] == 2 and found.samples[0] == 4
    assert found.history[light, :2].tolist() == [0.0, 0.0] and found.history[light, -1] > 0


def test_a_vm_moved_within_a_window_is_counted_at_the_speed_of_the_host_it_began_it_on():
    # one VM burning a core on a 1,000-MIPS host moves (CloudSim's model, 16 s) to a 2,000-MIPS host
    scenario = make_scenario(
        scenario={"step": 300, "duration": 300},
        hosts=[{"name": "slow", "cores": 1, "mips": 1000}, {"name": "fast", "cores": 1, "mips": 2000}],
        vms=[{"name": "v1", "host": "slow", "vcpus": 1, "memory": "1000MB", "mips": 1000}],
        workloads=[{"vm": "v1", "kind": "lookbusy"}],
        simulator={"migration_model": "cloudsim", "idle_guest_cpu": 0.0},
    )
    sim = Simulator(scenario)
    driver = SimDriver(sim)
    knowledge = Knowledge(float("inf"))
    knowledge.add(driver.observe())
    sim.start_migration(0, 1)
    sim.step()
    knowledge.add(driver.observe())
    assert knowledge.latest.vm_host[0] == 1  # it ended the window on the fast host
    # the simulator charged the step to the slow host, where a core is 1,000 MIPS: not 2,000
    assert cpu_asked(knowledge, period=300, length=1).history[0, -1] == pytest.approx(1000, rel=1e-3)


def test_nothing_is_asked_before_one_window_exists():
    knowledge = Knowledge()
    knowledge.add(SimDriver(Simulator(make_scenario(**BUSY))).observe())
    assert AnalyzeStage(knowledge).findings(PowerAware(**PowerAware.defaults()).analyses()).of(Overload) == ()


@pytest.mark.parametrize(
    ("settings", "h1_overloaded", "h1_limit"),
    [
        ({"detector": "thr", "threshold": 0.8}, True, 0.8),  # 87.5 % > 80 %
        ({"detector": "thr", "threshold": 0.9}, False, 0.9),
        ({"detector": "iqr"}, True, 0.7),  # 4 samples of 12: THR at 70 %
        ({"detector": "lr", "safety": 1.2}, True, 0.7),  # 4 samples of 10: THR at 70 %
    ],
)
def test_each_host_is_judged_by_its_detector_with_the_evidence(settings, h1_overloaded, h1_limit):
    policy = PowerAware(**{**PowerAware.defaults(), "period": 10.0, **settings})
    h1, h2 = AnalyzeStage(observed(40)).findings(policy.analyses()).of(Overload)
    assert (h1.host, h1.overloaded, h1.samples, h1.detector) == ("h1", h1_overloaded, 4, settings["detector"])
    assert h1.utilisation == pytest.approx(0.875, abs=0.01) and h1.limit == pytest.approx(h1_limit)
    assert not h2.overloaded and h2.utilisation == pytest.approx(0.05, abs=0.01)
    verdict = "overloaded" if h1_overloaded else "not overloaded"
    assert h1.notable == h1_overloaded and h1.describe().startswith(f"h1 {verdict} by {settings['detector'].upper()}")


def test_the_runtime_keeps_as_much_history_as_the_detector_judges():
    policy = PowerAware(**{**PowerAware.defaults(), "period": 300.0, "history": 30})
    runtime = Runtime(SimDriver(Simulator(make_scenario(**BUSY))), [policy], ControlSpec(history=600.0))
    assert runtime.knowledge.history == 9000.0
    longer = Runtime(SimDriver(Simulator(make_scenario(**BUSY))), [policy], ControlSpec(history=20000.0))
    assert longer.knowledge.history == 20000.0


def test_power_aware_migrations_rest_on_overload_findings_in_the_audit_log():
    scenario = make_scenario(
        scenario={"duration": 650},
        **BUSY,
        profiles={"pa": {"policies": ["power-aware"], "params": {"power-aware": {"consolidate": False}}}},
    )
    entries = run_profile(scenario, "pa").audit.entries
    proposed = [e for e in entries if e.event == "proposed"]
    assert proposed and all(e.target.startswith("v") for e in proposed)
    evidence = [e for e in entries if e.event == "finding" and e.plan == proposed[0].plan]
    assert [(e.action, e.target) for e in evidence] == [("overload", "h1")]
    assert evidence[0].details["overloaded"] and "h1 overloaded by THR" in evidence[0].reason


def test_the_history_shifted_one_period_on_is_the_history_read_again_as_vms_come_go_and_vanish():
    import numpy as np

    from sova.analyze.cpu_asked import _history

    churn = {  # VMs come and go at times off the periods' edges, and one is missing from two reports
        **BUSY,
        "vms": BUSY["vms"]
        + [
            {"name": "early", "host": "h2", "arrive": 3, "depart": 23},
            {"name": "late", "host": "h2", "arrive": 17},
        ],
        "workloads": [*BUSY["workloads"], {"vm": "early", "kind": "lookbusy"}, {"vm": "late", "kind": "lookbusy"}],
    }
    for kept in (float("inf"), 6.0):  # a Knowledge that keeps less than the history reads: read again
        sim = Simulator(make_scenario(scenario={"duration": 60}, **churn))
        driver = SimDriver(sim)
        knowledge, period, length, checked = Knowledge(kept), 4.0, 5, 0
        for second in range(41):
            snap = driver.observe()
            knowledge.add(_without(snap, "v2") if second in (9, 10) else snap)
            if second % 4 == 0 and second:
                shifted, again = cpu_asked(knowledge, period, length), _history(knowledge, period, length)
                assert np.array_equal(shifted.history, again.history), (kept, second)
                assert np.array_equal(shifted.samples, again.samples), (kept, second)
                checked += 1
            sim.step()
        assert checked == 10 and len(knowledge.latest.vms) == 6  # early is gone, late came
