"""The Analyze stage: analyzers give typed findings that policies plan from, the audit log records and JSON keeps."""

import json
from dataclasses import dataclass

import numpy as np
import pytest

from helpers import ROOT, make_scenario
from sova.analyze.base import AnalyzeStage, registry
from sova.analyze.findings import Finding, Findings, Hotspot, IntensityClass
from sova.analyze.intensity_class import classify, vf_eligible
from sova.analyze.load import host_loads
from sova.analyze.samples import window_samples
from sova.control.runtime import Runtime
from sova.drivers.sim import SimDriver
from sova.model.knowledge import Knowledge
from sova.model.scenario import ControlSpec
from sova.model.sweep import load_scenario
from sova.plan.autonomic_manager import migration_signals
from sova.plan.base import Policy, register
from sova.plan.dsriov import DynamicSRIOV, vf_plan
from sova.plan.dsriov_vlm import DsriovVlm
from sova.plan.threshold_migration import ThresholdMigration
from sova.sim.engine import Simulator

HOT = {  # h1's four cores run four CPU burners; h2 is idle
    "hosts": [{"name": "h1", "cores": 4}, {"name": "h2", "cores": 4}],
    "vms": [{"name": f"v{i}", "host": "h1"} for i in range(1, 5)],
    "workloads": [{"vm": "v*", "kind": "lookbusy"}],
}
CPU_RULE = {"interval": 10.0, "k": 3, "n": 5, "threshold": 0.85}


def observe(scenario, seconds: float) -> Knowledge:
    """The Knowledge after `seconds` of one snapshot a second."""
    driver = SimDriver(Simulator(scenario))
    knowledge = Knowledge()
    knowledge.add(driver.observe())
    while driver.now() < seconds - 1e-9:
        driver.sim.step()
        knowledge.add(driver.observe())
    return knowledge


@pytest.fixture(scope="module")
def hot() -> Knowledge:
    return observe(make_scenario(**HOT), 60)


@pytest.fixture(scope="module")
def vf_scenario():
    return load_scenario(ROOT / "scenarios" / "papers" / "sova" / "table2-vf-scheduling.toml")


def defaults(cls: type[Policy], **changes) -> Policy:
    return cls(**{**cls.defaults(), **changes})


def test_a_hot_host_yields_a_hotspot_finding_with_the_k_of_n_evidence(hot):
    h1, h2 = registry()["cpu-hotspot"].analyze(hot, CPU_RULE)
    assert (h1.host, h1.hot, h1.resource, h1.above, h1.k, h1.n) == ("h1", True, "cpu", 5, 3, 5)
    assert h1.load == h1.cpu > 0.85 and h1.forecast is None
    assert (h2.host, h2.hot, h2.above) == ("h2", False, 0)
    assert "h1 hot: cpu" in h1.describe() and "5 of the last 5 reports (needs 3)" in h1.describe()


def test_the_sova_rule_forecasts_and_judges_the_largest_resource(hot):
    h1, h2 = registry()["hotspot"].analyze(hot, {**CPU_RULE, "threshold": 0.7})
    assert h1.hot and not h2.hot
    assert h1.resource == "cpu" and h1.load == max(h1.cpu, h1.nic, h1.mem) and h1.forecast > 0.7


def test_no_finding_before_n_reports_exist(hot):
    early = observe(make_scenario(**HOT), 20)
    assert registry()["cpu-hotspot"].analyze(early, CPU_RULE) == ()


def test_findings_are_computed_once_when_two_policies_ask_the_same(monkeypatch):
    analyzer = registry()["cpu-hotspot"]
    calls = []

    def counted(knowledge, settings):
        calls.append(dict(settings))
        return type(analyzer).analyze(analyzer, knowledge, settings)

    monkeypatch.setattr(analyzer, "analyze", counted)
    sim = Simulator(make_scenario(**HOT))
    same = [defaults(ThresholdMigration, period=10.0), defaults(ThresholdMigration, period=10.0)]
    other = defaults(ThresholdMigration, period=10.0, hot=0.9)
    rt = Runtime(SimDriver(sim), [*same, other], ControlSpec(monitor_period=1.0), mode="dry-run")
    rt.tick()
    for _ in range(60):
        sim.step()
        rt.tick()
    rounds = 6  # at 10, 20, ..., 60 s
    assert len(calls) == 2 * rounds  # one for the two policies that ask the same, one for the third
    assert sum(c["threshold"] == 0.85 for c in calls) == rounds


def test_policies_asking_the_same_get_the_same_findings(hot):
    stage = AnalyzeStage(hot)
    first, second = (stage.findings(defaults(ThresholdMigration).analyses()) for _ in range(2))
    assert first == second and first.of(Hotspot)[0] is second.of(Hotspot)[0]


def test_the_audit_log_carries_the_findings_behind_each_plan(tmp_path):
    sim = Simulator(make_scenario(**HOT))
    rt = Runtime(SimDriver(sim), [defaults(ThresholdMigration)], ControlSpec(monitor_period=1.0), mode="dry-run")
    rt.tick()
    for _ in range(60):
        sim.step()
        rt.tick()
    entries = rt.audit.entries
    plan = next(e.plan for e in entries if e.event == "proposed")
    events = [e.event for e in entries if e.plan == plan]
    assert events == ["finding", "proposed", "dry-run"]
    (finding,) = (e for e in entries if e.plan == plan and e.event == "finding")
    assert (finding.policy, finding.action, finding.target) == ("threshold-migration", "hotspot", "h1")
    assert finding.details["hot"] and finding.details["above"] >= 3 and "h1 hot: cpu" in finding.reason
    rt.audit.write_jsonl(tmp_path / "audit.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert Hotspot(**next(x for x in lines if x["event"] == "finding")["details"]).hot


def test_a_plan_waiting_for_approval_shows_its_findings_beside_its_actions():
    sim = Simulator(make_scenario(**HOT))
    rt = Runtime(SimDriver(sim), [defaults(ThresholdMigration)], ControlSpec(monitor_period=1.0), mode="approve")
    rt.tick()
    for _ in range(60):
        sim.step()
        rt.tick()
    plan = rt.executor.pending[min(rt.executor.pending)]
    assert [f.host for f in plan.findings] == ["h1"] and plan.findings[0].hot
    assert [a.kind for a in plan.actions] == ["migrate"]


def test_a_plan_rests_only_on_findings_about_what_it_touches(hot):
    found = AnalyzeStage(hot).findings(defaults(ThresholdMigration).analyses())
    actions = defaults(ThresholdMigration).plan(hot, found)
    assert actions and {f.host for f in found.behind(actions, hot.latest)} == {"h1"}  # the cool h2 is left out


def test_sova_given_findings_plans_what_algorithm_2_gives_on_the_raw_loads(hot):
    sova = defaults(DsriovVlm, alpha=0.7)
    actions = sova.plan(hot, AnalyzeStage(hot).findings(sova.analyses()))
    loads = host_loads(hot, 10.0, 5)
    valid = hot.placement.reports_since_change(hot.latest, 10.0, 5)
    (signal,) = migration_signals(loads, 3, 0.7, valid=valid)[0]
    (move,) = [a for a in actions if a.kind == "migrate"]
    assert move.dst == hot.latest.hosts[signal.destination] == "h2"
    assert f"{signal.above} of the last 5 reports, forecast {signal.forecast:.0%}" in move.reason


def test_dsriov_given_findings_plans_what_the_samples_give(vf_scenario):
    knowledge = observe(vf_scenario, 40)
    policy = defaults(DynamicSRIOV)
    findings = AnalyzeStage(knowledge).findings(policy.analyses())
    snap, settings = knowledge.latest, policy.settings
    eligible = vf_eligible(snap)
    direct = classify(window_samples(knowledge, settings["window"]), snap, settings, eligible)
    expected = vf_plan(snap, direct, eligible, settings, policy.name)
    assert expected and policy.plan(knowledge, findings) == expected
    classes = findings.of(IntensityClass)
    assert [c.vm for c in classes] == list(snap.vms) and {c.category for c in classes} <= {"network", "io", "cpu"}
    assert [c.category == "network" for c in classes] == direct.candidate.tolist()


def test_findings_round_trip_through_json_and_look_up_by_host_and_vm(hot, vf_scenario):
    stage = AnalyzeStage(observe(vf_scenario, 40))
    findings = stage.findings([("intensity", defaults(DynamicSRIOV).analyses()[0][1])])
    findings = Findings.collect(findings.time, [*AnalyzeStage(hot).findings([("cpu-hotspot", CPU_RULE)]), *findings])
    back = Findings.from_dict(json.loads(json.dumps(findings.to_dict())))
    assert back == findings and back.of(Hotspot)[0].forecast is None
    assert [f.kind for f in findings.for_host("hm1")] == ["intensity"] * 8
    assert findings.for_vm("vm1")[0].vm == "vm1" and findings.for_host("h1")[0].host == "h1"
    assert findings.describe().startswith("findings at 40 s: 2 hotspot, 8 intensity")


def test_a_new_kind_of_finding_needs_no_change_to_the_container():
    @dataclass(frozen=True)
    class Note(Finding, kind="test-note"):
        host: str
        text: str

        def describe(self) -> str:
            return f"{self.host}: {self.text}"

    findings = Findings.collect(5.0, [Note("h1", "hello")])
    assert findings.of(Note) == (Note("h1", "hello"),) and findings.describe().endswith("h1: hello")
    assert Findings.from_dict(findings.to_dict()) == findings
    with pytest.raises(ValueError, match="unknown finding kind"):
        Findings.from_dict({"time": 0.0, "no-such-kind": []})


def test_a_policy_that_reads_an_unknown_analyzer_is_refused():
    class Reader(Policy):
        name = "test-reads-nothing-known"
        schema = {"period": ThresholdMigration.schema["period"]}
        analyzers = {"no-such-analyzer": {}}

        def plan(self, knowledge, findings):
            return []

    with pytest.raises(ValueError, match="no-such-analyzer"):
        register(Reader)


def test_every_policy_gives_its_analyzers_every_setting():
    for cls in (ThresholdMigration, DynamicSRIOV, DsriovVlm):
        for name, settings in defaults(cls).analyses():
            assert set(settings) == set(registry()[name].reads)
            assert all(np.ndim(v) == 0 for v in settings.values())


def test_findings_held_as_columns_read_as_the_same_findings_as_objects():
    from sova.analyze.findings import HostColumns, per_host
    from sova.analyze.overload import Overload

    objects = (Overload("h1", True, "thr", 0.9, 0.8, 12), Overload("h2", False, "thr", 0.2, 0.7, 12))
    fields = ("host", "overloaded", "detector", "utilisation", "limit", "samples")
    table = HostColumns(Overload, {name: [getattr(f, name) for f in objects] for name in fields})
    hot = Hotspot("h1", True, "cpu", 0.9, 3, 3, 3, 0.8, None, 0.9, 0.0, 0.1)
    held, made = Findings.collect(60.0, [table, hot]), Findings.collect(60.0, [*objects, hot])
    assert held.of(Overload) is table and held == made and tuple(table) == objects and table[1:] == objects[1:]
    assert held.for_host("h1") == made.for_host("h1") == (hot, objects[0]) and held.for_host("h3") == ()
    assert held.to_dict() == made.to_dict() and held.describe() == made.describe()
    assert per_host(table, ["h2", "h1"], "limit") == [0.7, 0.8] == per_host(objects, ["h2", "h1"], "limit")
    assert Findings.collect(60.0, [table, objects[0]]).of(Overload) == (*objects, objects[0])  # joined: a tuple
