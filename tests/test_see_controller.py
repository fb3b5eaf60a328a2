"""SASLO's SEE as an IO controller in the loop: it holds each VM to its target through the driver's
throttle every 25 ms, its optimizer raises targets the QoS allows and audits each change, and the
scenario's [[slos]] are read and checked with their places named."""

from __future__ import annotations

import pytest

from helpers import make_scenario
from sova.control.profiles import build_policies
from sova.control.runtime import Runtime
from sova.drivers.sim import SimDriver
from sova.experiments.scenario_runs import bind_controllers, run_profile
from sova.model.actions import SetIoLimit
from sova.model.schema import Field, InputError
from sova.plan.base import Policy
from sova.sim.engine import Simulator


def scenario(slo: dict, profile: str = "see", **see_params):
    return make_scenario(
        scenario={"duration": 100},
        simulator={"storage_step": 0.025, "io_limiter": "time-stamp"},  # SASLO's own limiter (sim/io_throttle.py)
        storage=[{"name": "ssd"}],
        vms=[{"name": "db", "host": "h1", "storage": "ssd"}],
        workloads=[{"kind": "filebench", "vm": "db", "personality": "varmail"}],
        slos=[{"vm": "db", **slo}],
        profiles={profile: {"policies": [profile], "params": {profile: see_params} if see_params else {}}},
    )


def test_a_fixed_target_is_held_every_second():
    result = run_profile(scenario({"throughput": [500, 500]}), "see")
    slo = result.summary["slo"]["db"]
    assert slo["target_mean"] == 500 and slo["throughput_mean"] == pytest.approx(500, rel=0.01)
    assert slo["sc_rate"] == pytest.approx(100) and slo["avpe"] < 1


def test_the_optimizer_raises_a_target_the_qos_allows_by_a_tenth_of_its_range_every_t_r_and_audits_it():
    # an SSD serves the mail server far above 600 IOPS: every SC rate is 100 %, every PF ratio near 0
    result = run_profile(scenario({"throughput": [400, 600], "sc_rate": [80, 90], "pf_ratio": [5, 10]}), "see")
    raised = [e for e in result.audit.entries if e.action.startswith("set-io-target")]
    assert [round(float(e.action.split("iops=")[1].split()[0])) for e in raised] == [420, 440, 460]  # at 30, 60, 90 s
    assert all("throughput target raised" in e.reason and e.policy == "see" for e in raised)
    assert result.summary["slo"]["db"]["throughput_mean"] == pytest.approx(
        (400 * 30 + 420 * 30 + 440 * 30 + 460 * 10) / 100, rel=0.02
    )


def test_without_the_optimizer_targets_stay_at_their_lower_bounds():
    result = run_profile(scenario({"throughput": [400, 600]}, optimize=False), "see")
    assert not [e for e in result.audit.entries if e.action.startswith("set-io-target")]
    assert result.summary["slo"]["db"]["target_mean"] == 400


def test_a_static_throttle_holds_the_lower_bound():
    result = run_profile(scenario({"throughput": [300, 600]}, profile="static-throttle"), "static-throttle")
    assert result.summary["slo"]["db"]["throughput_mean"] == pytest.approx(300, rel=0.01)


@pytest.mark.parametrize(
    ("slo", "where", "message"),
    [
        ({"throughput": [600, 400]}, "[[slos]] #1.throughput", "lower bound 600 is above the upper bound 400"),
        ({"throughput": [400]}, "[[slos]] #1.throughput", "expected [lower, upper]"),
        ({"throughput": [400, 600], "io_size": ["1KB", "lots"]}, "[[slos]] #1.io_size", ""),
        ({"throughput": [400, 600], "sc_rate": [80, 101]}, "[[slos]] #1.sc_rate", "within 0-100 %"),
        ({"sc_rate": [80, 90]}, "[[slos]] #1.throughput", "needs a throughput range"),
        ({"vm": "nobody*", "throughput": [1, 2]}, "[[slos]] #1.vm", "matches no VM"),
        ({"throughput": [400, 600], "latency": "-20ms"}, "[[slos]] #1.latency", ""),
        ({"throughput": [400, 600], "latency": "soon"}, "[[slos]] #1.latency", ""),
    ],
)
def test_a_bad_slo_entry_is_refused_naming_its_place(slo, where, message):
    with pytest.raises(InputError) as err:
        scenario(slo)
    assert where in str(err.value) and message in str(err.value)


def test_integral_control_reaches_a_target_with_its_placed_gain():
    result = run_profile(scenario({"throughput": [450, 450]}, profile="integral"), "integral")
    slo = result.summary["slo"]["db"]
    assert slo["throughput_mean"] == pytest.approx(450, rel=0.01) and slo["sc_rate"] > 98


def test_the_optimizer_raises_an_io_size_limit_by_4_kb_every_t_s_and_the_merge_limit_follows():
    slo = {"throughput": [400, 600], "io_size": ["12KiB", "24KiB"], "sc_rate": [80, 90], "pf_ratio": [5, 10]}
    sc = scenario(slo, t_s=30)
    policies = build_policies(sc, sc.profiles["see"])
    bind_controllers(policies, sc)
    sim = Simulator(sc)
    runtime = Runtime(SimDriver(sim), policies, sc.control)
    runtime.tick()
    merge = []
    for _ in range(round(65 / sim.dt)):
        sim.step()
        runtime.tick()
        merge.append(sim.storage.controls.size_limit[0])
    raised = [e for e in runtime.audit.entries if "IO size limit raised" in e.reason]
    assert [e.action.split("size=")[1] for e in raised] == ["16384", "20480"]  # at 30 and 60 s, 4 KiB a time
    assert merge[round(29 / sim.dt)] == 12288 and merge[-1] == 20480  # the simulator's merge limit follows


def test_a_scheduled_tenant_gets_the_statistics_of_each_target_it_had():
    slo = {"throughput": [300, 500], "ramp_step": 100, "ramp_every": "30s"}
    result = run_profile(scenario(slo, optimize=False), "see")
    levels = result.summary["slo"]["db"]["levels"]
    assert [level["target"] for level in levels] == [300, 400, 500]
    assert [level["seconds"] for level in levels] == pytest.approx([30, 30, 40], abs=1)  # whole seconds
    for level in levels:
        assert level["throughput_mean"] == pytest.approx(level["target"], rel=0.02)
        assert level["sc_rate"] > 90 and level["avpe"] < 2


def test_a_target_of_zero_has_no_scores_rather_than_a_division_by_zero():
    slo = run_profile(scenario({"throughput": [0, 100]}, profile="static-throttle"), "static-throttle").summary["slo"]
    assert slo["db"]["target_mean"] == 0 and "sc_rate" not in slo["db"]
    assert slo["db"]["throughput_mean"] <= 1.01  # held at the limiter's floor, 1 IOPS, not left unthrottled


def test_every_30_s_each_vm_gets_a_row_of_its_target_throughput_compliance_and_io_size():
    result = run_profile(scenario({"throughput": [400, 600], "io_size": ["8KiB", "16KiB"]}, optimize=False), "see")
    rows = result.slo_intervals
    assert [row["time"] for row in rows] == pytest.approx([30, 60, 90], abs=0.05)
    for row in rows:
        assert row["vm"] == "db" and row["target"] == 400 and row["io_size_limit"] == 8192
        assert row["throughput"] == pytest.approx(400, rel=0.02) and row["sc_rate"] > 90
        assert row["io_size"] == pytest.approx(8192, rel=1e-6)  # varmail's 16 KiB requests, split in two


def test_facade_holds_a_latency_slo_by_capping_the_requests_in_flight_while_the_throughput_holds():
    # varmail's 16 threads at 500 IOPS wait 32 ms; a 10 ms SLO lets 5 of them in flight at a time
    result = run_profile(scenario({"throughput": [500, 500], "latency": "10ms"}, optimize=False), "see")
    slo = result.summary["slo"]["db"]
    assert slo["throughput_mean"] == pytest.approx(500, rel=0.01)
    assert slo["latency_mean"] == pytest.approx(0.010, rel=0.02) and slo["latency_sc_rate"] > 95
    fixed = run_profile(
        scenario({"throughput": [500, 500], "latency": "10ms"}, profile="static-throttle"), "static-throttle"
    )
    assert fixed.summary["slo"]["db"]["latency_mean"] == pytest.approx(16 / 500, rel=0.02)  # Little's law, uncapped
    assert fixed.summary["slo"]["db"]["latency_sc_rate"] == 0


class _LimitsIo(Policy):
    """A test planner that wants an IO rate limit on db once, at its first round."""

    name = "test-io-limit"
    schema = {"period": Field("duration", 5.0, "")}

    def __init__(self, priority: int):
        super().__init__(period=5.0, priority=priority)
        self.wanted = True

    def plan(self, knowledge, findings):
        wanted, self.wanted = self.wanted, False
        return [SetIoLimit(vm="db", iops=123.0, policy=self.name, reason="test")] if wanted else []


def _see_beside(priority: int, mode: str = "auto"):
    """SEE holding db at 500 IOPS beside a planner of `priority` that sets db's IO limit; 20 s."""
    sc = scenario({"throughput": [500, 500]})
    policies = [*build_policies(sc, sc.profiles["see"]), _LimitsIo(priority)]
    bind_controllers(policies, sc)
    sim = Simulator(sc)
    runtime = Runtime(SimDriver(sim), policies, sc.control, mode)
    runtime.tick()
    for _ in range(round(20 / sim.dt)):
        sim.step()
        runtime.tick()
    return sim, runtime.audit.entries


def test_a_planner_of_lower_priority_may_not_set_the_io_limit_of_a_vm_an_io_controller_holds():
    sim, entries = _see_beside(priority=10)  # SEE's is 60
    refused = [e for e in entries if e.policy == "test-io-limit" and e.event == "rejected"]
    assert refused and "IO control of db of see" in refused[0].reason + refused[0].message
    assert sim.storage.controls.limit[0] == pytest.approx(500)  # SEE's throttle holds


def test_a_planner_of_higher_priority_takes_a_vm_from_an_io_controller_which_then_leaves_it_alone():
    sim, entries = _see_beside(priority=90)
    given = [e for e in entries if e.policy == "see" and e.event == "note" and e.target == "db"]
    assert given and "gives up the IO control of db" in given[0].reason and "test-io-limit" in given[0].reason
    assert any(e.policy == "test-io-limit" and e.event == "applied" for e in entries)
    assert sim.storage.controls.limit[0] == 123  # the planner's limit stands: SEE throttles db no more


def test_an_io_controller_keeps_its_vm_when_the_action_that_won_it_is_only_a_dry_run():
    sim, entries = _see_beside(priority=90, mode="dry-run")
    assert any(e.policy == "test-io-limit" and e.event == "dry-run" for e in entries)
    assert not any(e.policy == "see" and e.event == "note" for e in entries)
    assert sim.storage.controls.limit[0] == pytest.approx(500)  # SEE still holds db
