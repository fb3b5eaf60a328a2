"""The worked examples of docs/architecture.md run as written: a new policy and a new controller, each one
module's code, taken from the document, registered, and run by a profile on the simulator; a new
simulator subsystem, advanced beside a running simulator."""

from __future__ import annotations

import re

import pytest

from helpers import ROOT, make_scenario
from sova.experiments.scenario_runs import run_profile
from sova.plan import base
from sova.sim.engine import Simulator


def example(title: str) -> str:
    """The first Python block after the worked example of that title."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    start = text.index(f"**Worked example: {title}")
    return re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)


@pytest.fixture
def registered():
    """Runs an example's code; whatever it registers is unregistered afterwards."""
    before = base.registry()
    yield lambda code: exec(compile(code, "docs/architecture.md", "exec"), {})
    for name in set(base.registry()) - set(before):
        del base._REGISTRY[name]


def test_the_new_policy_of_the_worked_example_spreads_the_vms_and_says_why(registered):
    registered(example("a new policy"))
    scenario = make_scenario(
        scenario={"duration": 300},
        hosts=[{"name": "h{i}", "count": 2, "cores": 8, "memory": "32GiB"}],
        vms=[{"name": "v{i}", "count": 4, "host": "h1", "memory": "1GiB"}],
        profiles={"spread": {"policies": ["spread"]}},
    )
    result = run_profile(scenario, "spread")
    moves = [e for e in result.audit.entries if e.event == "finished" and e.policy == "spread"]
    assert [e.reason for e in moves] == ["h1 holds 4 VMs, h2 0", "h1 holds 3 VMs, h2 1"]  # then 2 and 2: done


def test_the_new_controller_of_the_worked_example_holds_a_vm_to_the_middle_of_its_range(registered):
    registered(example("a new controller"))
    scenario = make_scenario(
        scenario={"duration": 60},
        simulator={"storage_step": 0.025},
        storage=[{"name": "ssd"}],
        vms=[{"name": "db", "host": "h1", "storage": "ssd"}],
        workloads=[{"kind": "filebench", "vm": "db", "personality": "varmail"}],
        slos=[{"vm": "db", "throughput": [300, 500]}],
        profiles={"mid": {"policies": ["mid-range"]}},
    )
    slo = run_profile(scenario, "mid").summary["slo"]["db"]
    assert slo["target_mean"] == 400 and slo["throughput_mean"] == pytest.approx(400, rel=0.01)


def test_the_new_subsystem_of_the_worked_example_follows_the_hosts_power_with_its_lag():
    namespace: dict = {}
    exec(compile(example("a new subsystem"), "docs/architecture.md", "exec"), namespace)
    sim = Simulator(make_scenario(scenario={"duration": 600}, hosts=[{"name": "h1", "cores": 8}]))
    thermal = namespace["Thermal"](1, ambient=22.0, kelvin_per_watt=0.05, lag=60.0)
    for _ in range(600):
        sim.step()
        thermal.advance(sim.sensors.gauges["power"], sim.fabric_dt)
    steady = 22.0 + 0.05 * sim.sensors.gauges["power"][0]
    assert thermal.celsius[0] == pytest.approx(steady, rel=1e-3)  # ten lags: within e^-10 of its steady state
