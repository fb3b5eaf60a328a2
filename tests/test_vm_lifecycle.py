"""VMs that come and go during a run: arrival, admission by first fit, departure, and what they leave."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import make_scenario
from sova.control.runtime import Runtime
from sova.drivers.sim import SimDriver
from sova.model.actions import FAILED, RUNNING, CreateVM, Migrate, SetCpu
from sova.model.scenario import ControlSpec
from sova.model.schema import InputError
from sova.sim.engine import Simulator

HOSTS = [{"name": "h{i}", "count": 2, "cores": 4, "memory": "8GiB", "dom0_memory": "1GiB"}]


def run(scenario, seconds: float):
    sim = Simulator(scenario)
    driver = SimDriver(sim)
    runtime = Runtime(driver, [], ControlSpec(monitor_period=1.0))
    runtime.tick()
    seen = {}
    while sim.t < seconds - 1e-9:
        sim.step()
        runtime.tick()
        seen[round(sim.t)] = driver.observe()
    return sim, driver, runtime, seen


def lifecycle(sim):
    return [(e.time, e.vm, e.event, e.host) for e in sim.lifecycle.log]


def test_a_vm_that_arrives_later_is_placed_by_first_fit_then_and_runs_its_work_from_then():
    scenario = make_scenario(
        hosts=HOSTS,
        vms=[{"name": "a", "memory": "6GiB"}, {"name": "late", "memory": "2GiB", "arrive": 20}],
        workloads=[{"kind": "lookbusy", "vm": "late", "util": 1.0}],
    )
    sim, _, runtime, seen = run(scenario, 40)
    assert "late" not in seen[19].vms and "late" in seen[20].vms
    assert lifecycle(sim) == [(20.0, "late", "arrived", ""), (20.0, "late", "created", "h2")]  # h1 lacks memory
    created = [e for e in runtime.audit.entries if e.action.startswith("create-vm")]
    assert [(e.time, e.event, e.status) for e in created] == [(20.0, "applied", "ok")]
    index = seen[40].vms.index("late")
    assert seen[40].counters.cpu_time[index] == pytest.approx(20.0, rel=0.01)  # busy since 20 s, not before
    assert seen[40].counters.blocked_time[index] < 0.5  # nothing counted while it was not there


def test_a_departure_frees_memory_and_a_waiting_request_is_placed_then():
    scenario = make_scenario(
        hosts=HOSTS,
        vms=[
            {"name": "big{i}", "count": 2, "memory": "6GiB", "depart": 0},
            {"name": "short", "memory": "1GiB", "host": "h1", "depart": 30},
            {"name": "late", "memory": "1GiB", "arrive": 10},
            {"name": "later", "memory": "1GiB", "arrive": 12},
        ],
    )
    sim, driver, runtime, seen = run(scenario, 40)
    events = lifecycle(sim)
    assert (10.0, "late", "created", "h2") in events  # h2 had 1 GiB left
    assert (30.0, "short", "deleted", "h1") in events
    assert (30.0, "later", "created", "h1") in events  # waited 18 s for short's memory
    assert "short" not in seen[30].vms and "short" in seen[29].vms
    waiting = [e for e in runtime.audit.entries if e.event == "waiting"]
    assert [e.target for e in waiting] == ["later"]  # said once, not at every tick
    assert driver.requests() == []


def test_a_vm_deleted_while_it_migrates_stops_the_migration_and_frees_its_vf():
    scenario = make_scenario(
        hosts=[{**HOSTS[0], "nic": {"bandwidth": "1Gb/s", "sriov": True, "max_vfs": 2}}],
        vms=[
            {"name": "mover", "host": "h1", "memory": "4GiB", "depart": 5},
            {"name": "vf", "host": "h2", "nic": "vf", "depart": 5},
        ],
    )
    sim = Simulator(scenario)
    driver = SimDriver(sim)
    assert driver.apply(Migrate(vm="mover", dst="h2")).status == RUNNING
    assert sim.vfs.used.tolist() == [0, 1]
    for _ in range(5):
        sim.step()
    assert sim.migrations.log[-1].status == "cancelled" and not sim.migrations.under_way
    assert sim.vfs.used.tolist() == [0, 0]
    assert [sim.host_mem_used(h) for h in range(2)] == [0.0, 0.0]
    assert driver.poll(Migrate(vm="mover", dst="h2")).status == FAILED
    refused = driver.apply(SetCpu(vm="mover", weight=10))
    assert refused.status == FAILED and "not running" in refused.message


def test_a_vm_with_a_named_host_that_is_full_when_it_comes_is_refused_and_said_so():
    scenario = make_scenario(
        hosts=HOSTS, vms=[{"name": "a", "host": "h1", "memory": "7GiB"}, {"name": "b", "host": "h1", "arrive": 5}]
    )
    sim, _, _, seen = run(scenario, 10)
    (record,) = sim.lifecycle.log
    assert (record.vm, record.event, record.host) == ("b", "refused", "h1")
    assert "needs 1024 MiB" in record.message and "b" not in seen[10].vms


def test_creating_a_vm_that_does_not_wait_for_a_host_fails_and_changes_nothing():
    sim = Simulator(make_scenario(hosts=HOSTS, vms=[{"name": "a", "host": "h1"}]))
    outcome = SimDriver(sim).apply(CreateVM(vm="a", host="h2"))
    assert outcome.status == FAILED and "runs already" in outcome.message
    assert sim.vms.host.tolist() == [0]


@pytest.mark.parametrize(
    ("vm", "where", "expected"),
    [
        ({"host": "random", "arrive": 5}, "[[vms]] #1 (v).host", "expected 'auto'"),
        ({"arrive": 10, "depart": 10}, "[[vms]] #1 (v).depart", "not after arrive"),
        ({"arrive": float("nan")}, "[[vms]] #1 (v).arrive", "finite"),
    ],
)
def test_a_lifetime_that_cannot_be_is_refused_with_its_place(vm, where, expected):
    with pytest.raises(InputError) as err:
        make_scenario(hosts=HOSTS, vms=[{"name": "v", **vm}])
    assert where in str(err.value) and expected in str(err.value)


def test_a_vm_that_is_not_there_offers_no_storage_io():
    scenario = make_scenario(
        hosts=HOSTS,
        storage=[{"name": "ssd"}],
        vms=[{"name": "late", "arrive": 10}, {"name": "gone", "host": "h1", "depart": 3}],
        workloads=[{"kind": "fio", "vm": "*", "iops": 1000}],
    )
    sim, _, _, _ = run(scenario, 8)
    ops = sim.sensors.counters["blk_rd_ops"] + sim.sensors.counters["blk_wr_ops"]
    assert ops.tolist() == [0.0, pytest.approx(3000)]  # late: not yet; gone: its first 3 s only


@pytest.mark.parametrize("host", ["h1", "auto"])
def test_a_vm_that_comes_and_goes_within_one_step_never_runs(host):
    scenario = make_scenario(
        scenario={"step": 1}, hosts=HOSTS, vms=[{"name": "blip", "host": host, "arrive": 2.3, "depart": 2.7}]
    )
    sim, driver, _, seen = run(scenario, 6)
    assert all("blip" not in snap.vms for snap in seen.values())
    assert not sim.lifecycle.waiting and driver.requests() == []


def test_a_vm_sized_by_its_trace_is_checked_against_its_named_host_at_the_start():
    opendc = Path(__file__).resolve().parent / "fixtures" / "opendc_bitbrains_excerpt"
    scenario = make_scenario(
        hosts=HOSTS,
        vms=[{"name": "bb{i}", "count": 7, "host": "h1", "from_trace": True}],
        workloads=[{"kind": "opendc", "vm": "bb*", "file": str(opendc)}],
    )
    sim = Simulator(scenario)
    held = sim.host_mem_used(0)
    assert 0 < held <= sim.vms.host_memory[0]
    assert any(e.event == "refused" for e in sim.lifecycle.log)


def test_admission_sees_the_vms_it_created_before_the_next_monitor_reading():
    scenario = make_scenario(
        hosts=[{"name": "h1", "cores": 1, "memory": "8GiB", "dom0_memory": "1GiB"}],
        vms=[{"name": "a", "vcpus": 4, "arrive": 1}, {"name": "b", "vcpus": 4, "arrive": 2}],
    )
    sim = Simulator(scenario)
    driver = SimDriver(sim)
    runtime = Runtime(driver, [], ControlSpec(monitor_period=30.0))  # the Knowledge is 30 s stale
    runtime.tick()
    for _ in range(10):
        sim.step()
        runtime.tick()
    assert [(e.vm, e.event) for e in sim.lifecycle.log if e.event == "created"] == [("a", "created")]
    assert [e.target for e in runtime.audit.entries if e.event == "waiting"] == ["b"]  # 4 vCPUs per core: full


def test_moves_and_creations_are_tracked_while_the_set_of_vms_changes():
    scenario = make_scenario(
        hosts=HOSTS,
        vms=[
            {"name": "mover", "host": "h1", "memory": "512MiB", "dirty_rate": 0},
            {"name": "late{i}", "count": 5, "memory": "512MiB", "arrive": 1, "depart": 30},
        ],
    )
    sim = Simulator(scenario)
    driver = SimDriver(sim)
    runtime = Runtime(driver, [], ControlSpec(monitor_period=1.0))
    runtime.tick()
    assert driver.apply(Migrate(vm="mover", dst="h2")).status == RUNNING
    for _ in range(40):  # VMs arrive at 1 s and leave at 30 s while the migration runs and ends
        sim.step()
        runtime.tick()
    placement = runtime.knowledge.placement
    moved_at = sim.migrations.log[-1].finished
    assert sim.migrations.log[-1].status == "completed"
    assert placement.vm_arrived["mover"] == pytest.approx(moved_at, abs=1.0)
    assert placement.host_changed["h1"] >= 30.0  # the late VMs first-fit onto h1 and left at 30 s
