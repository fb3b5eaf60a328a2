"""Host power states: an empty host asleep or off draws its sleep or off power, a host with VMs refuses to
go down, a migration to a sleeping host wakes it and waits, and PDM counts a migration to its second
within a 300-s step; the host-standby policy and NPA's full power, against numbers worked out by hand."""

from __future__ import annotations

import dataclasses

import pytest

from helpers import make_scenario
from sova.control.executor import Executor
from sova.drivers.sim import SimDriver
from sova.experiments.scenario_runs import run_profile
from sova.model.actions import FAILED, OK, RUNNING, CreateVM, Migrate, SetHostPower
from sova.model.knowledge import Knowledge
from sova.model.scenario import ControlSpec
from sova.sim.engine import Simulator

G4 = {"cores": 2, "mips": 1860, "memory": "4096MiB", "dom0_memory": 0, "power_model": "hp-ml110-g4"}


def two_hosts(step: float = 1.0, **extra):
    """h1 runs one 1-vCPU VM at 50 % of a core; h2 is empty."""
    return make_scenario(
        scenario={"duration": 600, "step": step},
        hosts=[{"name": "h{i}", "count": 2, **G4, **extra}],
        vms=[{"name": "vm1", "host": "h1", "vcpus": 1, "memory": 1024}],
        workloads=[{"vm": "vm1", "kind": "lookbusy", "util": 0.5}],
    )


def run(sim: Simulator, seconds: float) -> None:
    for _ in range(round(seconds / sim.dt)):
        sim.step()


def test_an_empty_host_asleep_or_off_draws_its_sleep_or_off_power():
    sim = Simulator(two_hosts(sleep_power=8.0, off_power=5.0))
    driver = SimDriver(sim)
    assert driver.apply(SetHostPower(host="h2", state="sleep")).status == OK
    run(sim, 100)
    assert sim.sensors.energy_j[1] == pytest.approx(8.0 * 100)  # 8 W for 100 s
    assert driver.apply(SetHostPower(host="h2", state="off")).status == OK
    run(sim, 100)
    assert sim.sensors.energy_j[1] == pytest.approx(800 + 5.0 * 100)
    assert driver.observe().host_power == ("on", "off")
    assert sim.power.shutdowns.tolist() == [0, 2]


def test_a_host_with_vms_refuses_to_go_down_and_the_executor_says_why():
    sim = Simulator(two_hosts())
    driver = SimDriver(sim)
    out = driver.apply(SetHostPower(host="h1", state="sleep"))
    assert out.status == FAILED and "only an empty host" in out.message
    knowledge = Knowledge()
    knowledge.add(driver.observe())
    verdict = Executor(driver, ControlSpec()).check(SetHostPower(host="h1", state="off"), knowledge)
    assert verdict == "h1 has VMs (or one migrating to it); only an empty host can go to off"
    assert Executor(driver, ControlSpec()).check(SetHostPower(host="h2", state="off"), knowledge) is None


def test_a_migration_to_a_sleeping_host_wakes_it_and_starts_once_it_is_on():
    sim = Simulator(two_hosts(sleep_wake_time=20.0, wake_power=150.0))
    driver = SimDriver(sim)
    driver.apply(SetHostPower(host="h2", state="sleep"))
    run(sim, 10)
    assert driver.apply(Migrate(vm="vm1", dst="h2")).status == RUNNING
    assert driver.observe().host_power == ("on", "waking")
    run(sim, 19)
    assert sim.migrations.under_way and sim.migrations.under_way[0][0].sent == 0  # nothing sent while h2 wakes
    run(sim, 60)
    (record,) = sim.migrations.log
    assert record.status == "completed" and record.dst == "h2"
    assert record.finished - record.started > 20.0  # the wake-up, then the copy
    assert driver.observe().host_power == ("on", "on") and sim.power.wakes.tolist() == [0, 1]
    # h2: 10 s asleep at 8 W, then 20 s waking at 150 W, then on
    on_power = sim.sensors.energy_j[1] - 8.0 * 10 - 150.0 * 20
    assert 0 < on_power < 117.0 * 59


def test_a_vm_cannot_be_created_on_a_host_that_is_not_on():
    scenario = make_scenario(
        hosts=[{"name": "h{i}", "count": 2, **G4}],
        vms=[{"name": "late", "host": "auto", "arrive": 5, "vcpus": 1, "memory": 512}],
    )
    sim = Simulator(scenario)
    driver = SimDriver(sim)
    driver.apply(SetHostPower(host="h2", state="sleep"))
    run(sim, 6)
    out = driver.apply(CreateVM(vm="late", host="h2"))
    assert out.status == FAILED and out.message == "h2 is sleep; wake it first"


def test_an_arrival_no_host_that_is_on_can_take_wakes_a_sleeping_host_and_starts_there():
    scenario = make_scenario(
        scenario={"duration": 600},
        hosts=[{"name": "h{i}", "count": 3, **G4, "sleep_wake_time": 5}],
        vms=[
            {"name": "big", "host": "h1", "vcpus": 1, "memory": 3072},
            {"name": "late", "host": "auto", "arrive": 200, "vcpus": 1, "memory": 2048},
        ],
        workloads=[{"vm": "big", "kind": "lookbusy", "util": 0.5}],
        profiles={"standby": {"policies": ["host-standby"]}},
    )
    result = run_profile(scenario, "standby")
    events = [(e.event, e.action) for e in result.audit.entries if e.event in ("applied", "failed")]
    # h2 and h3 sleep at the first look; h1 has 1 GiB left, so the arrival wakes h2 (the first asleep),
    # waits out its 5 s wake-up and starts there; h3 sleeps on
    assert events[:2] == [
        ("applied", "set-host-power host=h2 state=sleep"),
        ("applied", "set-host-power host=h3 state=sleep"),
    ]
    assert events[2:] == [("applied", "set-host-power host=h2 state=on"), ("applied", "create-vm vm=late host=h2")]
    created = next(e for e in result.audit.entries if e.action == "create-vm vm=late host=h2")
    woken = next(e for e in result.audit.entries if e.action == "set-host-power host=h2 state=on")
    assert woken.time == pytest.approx(200, abs=1) and 205 <= created.time <= 215
    assert result.summary["lifecycle"]["never_placed"] == 0 and result.summary["host_wakes"] == 1


def test_pdm_counts_a_migration_to_its_second_within_a_300_s_step():
    sim = Simulator(two_hosts(step=300.0))
    driver = SimDriver(sim)
    driver.apply(Migrate(vm="vm1", dst="h2"))
    run(sim, 300)
    (record,) = sim.migrations.log
    seconds = record.finished - record.started
    assert 0 < seconds < 30
    # 10 % of what it asked (half a core) for as long as it migrated, not for the whole step
    assert sim.sensors.vm_migration_loss[0] == pytest.approx(
        0.1 * sim.sensors.vm_cpu_asked[0] / 300 * seconds, rel=0.02
    )


def test_host_standby_puts_the_empty_host_to_sleep_after_its_idle_time():
    scenario = make_scenario(
        scenario={"duration": 300},
        hosts=[{"name": "h{i}", "count": 2, **G4, "sleep_power": 8.0}],
        vms=[{"name": "vm1", "host": "h1", "vcpus": 1, "memory": 1024}],
        workloads=[{"vm": "vm1", "kind": "lookbusy", "util": 0.5}],
        profiles={
            "standby": {"policies": ["host-standby"], "params": {"host-standby": {"idle": 120}}},
            "none": {"policies": []},
        },
    )
    result = run_profile(scenario, "standby")
    applied = [e for e in result.audit.entries if e.event == "applied"]
    assert [(e.action, e.status) for e in applied] == [("set-host-power host=h2 state=sleep", OK)]
    asleep_at = applied[0].time
    assert 120 <= asleep_at <= 180  # looked at every 60 s, empty since the first look
    # h2 drew 86 W (a G4 at idle) until it slept, then 8 W
    saved = (86.0 - 8.0) * (300 - asleep_at) / 3.6e6
    assert run_profile(scenario, "none").summary["energy_kwh"] - result.summary["energy_kwh"] == pytest.approx(saved)


def test_a_host_that_does_not_follow_its_load_draws_its_full_power():
    scenario = two_hosts()
    sim = Simulator(dataclasses.replace(scenario, simulator={"power_follows_load": False}))
    run(sim, 100)
    assert sim.sensors.energy_j.tolist() == pytest.approx([117.0 * 100, 117.0 * 100])


def test_a_profile_may_run_with_its_own_simulator_keys_and_npa_draws_full_power_all_day():
    scenario = make_scenario(
        scenario={"duration": 600, "step": 300},
        hosts=[{"name": "h{i}", "count": 2, **G4}],
        simulator={"io_noise": False},
        profiles={"npa": {"simulator": {"power_follows_load": False}}, "dvfs": {}},
    )
    assert scenario.profiles["npa"].simulator == {"power_follows_load": False}  # io_noise stays the scenario's
    npa, dvfs = (run_profile(scenario, name).summary["energy_kwh"] for name in ("npa", "dvfs"))
    assert npa == pytest.approx(2 * 117.0 * 600 / 3.6e6) and dvfs == pytest.approx(2 * 86.0 * 600 / 3.6e6)


def test_a_profiles_bad_simulator_key_is_named():
    from sova.model.schema import InputError

    with pytest.raises(InputError, match=r"\[profiles.npa.simulator\]"):
        make_scenario(profiles={"npa": {"simulator": {"power_follows_load": "no"}}})
