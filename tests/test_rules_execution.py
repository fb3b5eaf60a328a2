"""Placement rules at work: the executor refuses a step that breaks a must rule, admission places within
the rules, keep-rules moves VMs back within them, and a drained host empties and takes no VM until released."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import make_scenario
from sova.control.runtime import Runtime
from sova.drivers.sim import SimDriver
from sova.experiments.scenario_runs import run_profile
from sova.model.actions import OK, Migrate
from sova.model.placement_rules import PlacementRule, RuleBook
from sova.model.scenario import ControlSpec
from sova.model.sweep import load_scenario
from sova.sim.engine import Simulator
from test_executor import Rig as ExecutorRig

ROOT = Path(__file__).resolve().parent.parent
HOSTS = [{"name": "h{i}", "count": 3, "cores": 8, "memory": "16GiB", "dom0_memory": "1GiB"}]


class Rig(ExecutorRig):
    """test_executor's rig, its Knowledge holding placement rules."""

    def __init__(self, rules, vms, control=None):
        super().__init__(control=control, hosts=HOSTS, vms=vms)
        self.k.rules = RuleBook(rules)

    def where(self, vm):
        return self.sim.host_names[self.sim.vms.host[self.sim.vm_names.index(vm)]]

    def rejected(self):
        return [e.message for e in self.ex.audit.entries if e.event == "rejected"]


def test_the_executor_refuses_a_migration_that_breaks_a_must_rule_and_names_it():
    rig = Rig(
        [PlacementRule("apart", "anti-affinity", ("a", "b"))],
        [{"name": "a", "host": "h1"}, {"name": "b", "host": "h2"}],
    )
    rig.ex.submit([Migrate(vm="b", dst="h1")], rig.k)
    rig.run(10)
    assert rig.where("b") == "h2"
    (message,) = rig.rejected()
    assert message == "b on h1 would break apart (must anti-affinity: VMs a, b)"


def test_a_should_rule_does_not_stop_the_executor():
    rig = Rig(
        [PlacementRule("apart", "anti-affinity", ("a", "b"), must=False)],
        [{"name": "a", "host": "h1"}, {"name": "b", "host": "h2"}],
    )
    rig.ex.submit([Migrate(vm="b", dst="h1")], rig.k)
    rig.run(20)
    assert rig.where("b") == "h1" and not rig.rejected()


def test_an_affinity_group_moves_as_one_plan_but_not_one_vm_alone():
    vms = [{"name": "a", "host": "h1"}, {"name": "b", "host": "h1"}]
    rig = Rig([PlacementRule("together", "affinity", ("a", "b"))], vms)
    rig.ex.submit([Migrate(vm="a", dst="h2")], rig.k)
    rig.run(10)
    assert rig.where("a") == "h1" and "would break together" in rig.rejected()[0]
    rig.ex.submit([Migrate(vm="a", dst="h3"), Migrate(vm="b", dst="h3")], rig.k, patient=True)
    rig.run(60)
    assert rig.where("a") == rig.where("b") == "h3" and len(rig.rejected()) == 1


def test_a_patient_plan_waits_for_the_migration_cap_instead_of_being_rejected():
    vms = [{"name": "v{i}", "count": 3, "host": "h1"}]
    rig = Rig([], vms, ControlSpec(hold_down=0))
    moves = [Migrate(vm=f"v{i}", dst="h2") for i in (1, 2, 3)]
    rig.ex.submit(moves, rig.k, patient=True)
    rig.run(60)
    assert [rig.where(f"v{i}") for i in (1, 2, 3)] == ["h2"] * 3 and not rig.rejected()
    rig.ex.submit([Migrate(vm=f"v{i}", dst="h3") for i in (1, 2)], rig.k)  # not patient: the cap rejects
    rig.run(30)
    assert any("per-host cap" in m for m in rig.rejected())


def run(scenario, seconds, rules=None):
    sim = Simulator(scenario)
    runtime = Runtime(SimDriver(sim), [], ControlSpec(), rules=rules if rules is not None else scenario.rules)
    runtime.tick()
    while sim.t < seconds - 1e-9:
        sim.step()
        runtime.tick()
    return sim, runtime


def test_admission_places_arriving_vms_within_the_rules():
    scenario = make_scenario(
        hosts=HOSTS,
        vms=[{"name": "late{i}", "count": 3, "memory": "1GiB", "arrive": 5}, {"name": "x", "host": "h3"}],
        rules=[
            {"kind": "anti-affinity", "vms": ["late*"]},
            {"kind": "off-hosts", "vms": ["late3"], "hosts": ["h3"], "strength": "should"},
        ],
        scenario={"duration": 20},
    )
    sim, _ = run(scenario, 10)
    hosts = {sim.vm_names[v]: sim.host_names[sim.vms.host[v]] for v in range(len(sim.vm_names))}
    assert len({hosts["late1"], hosts["late2"], hosts["late3"]}) == 3  # first fit would stack them on h1
    assert hosts["late3"] != "h3" or {hosts["late1"], hosts["late2"]} == {"h1", "h2"}


def test_keep_rules_moves_vms_placed_against_a_must_rule_and_reports_what_it_cannot_fix():
    scenario = make_scenario(
        hosts=HOSTS,
        vms=[{"name": "a", "host": "h1"}, {"name": "b", "host": "h1"}, {"name": "c", "host": "h1"}],
        rules=[{"kind": "anti-affinity", "vms": ["a", "b"], "name": "ab-apart"}],
        scenario={"duration": 120},
    )
    sim, runtime = run(scenario, 60)
    assert sim.vms.host[0] != sim.vms.host[1]
    moved = [e for e in runtime.audit.entries if e.event == "finished" and e.policy == "keep-rules"]
    assert len(moved) == 1 and moved[0].status == OK and "breaks rule ab-apart" in moved[0].reason
    # three VMs that must be apart on two usable hosts (h3 is off-limits): one stays, said once
    stuck = RuleBook(
        [PlacementRule("abc", "anti-affinity", ("a", "b", "c")), PlacementRule("no-h3", "off-hosts", ("*",), ("h3",))]
    )
    sim, runtime = run(scenario, 150, rules=stuck)
    notes = [e for e in runtime.audit.entries if e.event == "note"]
    assert len(notes) == 1 and "no host can take them" in notes[0].reason and "abc" in notes[0].reason


def test_a_drained_host_empties_within_the_rules_takes_no_vm_and_takes_vms_again_once_released(tmp_path):
    scenario = load_scenario(ROOT / "scenarios/operations/drain.toml")
    result = run_profile(scenario, "default")
    (drain, release) = result.summary["events"]
    assert drain["drained_at"] is not None and drain["drain_time"] < 60 and drain["migrations"] == 5
    assert release["applied"] == 900
    rules = result.summary["rules"]
    assert rules["web-apart"]["broken_vm_seconds"] == 0 and rules["db-on-licensed-hosts"]["broken_vm_seconds"] == 0
    # the app and its cache move one after the other: apart only while the second one migrates
    assert rules["app-with-cache"]["broken_vm_seconds"] <= 2 * 15
    into_hm1 = [m for m in result.migrations if m.dst == "hm1" and 120 <= m.started < 900]
    assert not into_hm1
    assert all(m.dst != "hm1" for m in result.migrations)
    db = [m for m in result.migrations if m.vm == "db"]
    assert [m.dst for m in db] == ["hm2"]  # the only other host its rule allows
    notes = [e.reason for e in result.audit.entries if e.event == "note"]
    assert notes == ["hm1 put into maintenance by the scenario", "hm1 released from maintenance by the scenario"]
    json.dumps(result.summary)  # the summary stays JSON
