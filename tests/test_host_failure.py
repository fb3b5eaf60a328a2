"""A host that crashes: the simulator stops it and its VMs, the runtime declares it failed once it has been
silent for the grace period, and ha-restart boots its VMs elsewhere within the rules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers import make_scenario
from sova.experiments.scenario_runs import run_profile
from sova.model.schema import InputError
from sova.model.sweep import load_scenario
from sova.sim.engine import Simulator
from sova.sim.host_faults import RESTART_TIME
from sova.sim.records import SimError

ROOT = Path(__file__).resolve().parent.parent
HOSTS = [{"name": "h{i}", "count": 3, "cores": 4, "memory": "16GiB", "dom0_memory": "1GiB"}]


def test_a_crashed_host_and_its_vms_stop_counting_and_a_restart_boots_the_vm_elsewhere():
    sim = Simulator(
        make_scenario(
            hosts=HOSTS,
            vms=[{"name": "a", "host": "h1"}, {"name": "b", "host": "h2"}],
            workloads=[{"vm": "*", "kind": "lookbusy", "util": 1.0}],
        )
    )
    for _ in range(10):
        sim.step()
    sim.crash_host(0)
    cpu_a, host_cpu = sim.sensors.counters["cpu_time"][0], sim.sensors.counters["host_cpu_time"][0]
    for _ in range(10):
        sim.step()
    assert sim.sensors.counters["cpu_time"][0] == cpu_a and sim.sensors.counters["host_cpu_time"][0] == host_cpu
    assert sim.faults.seen[0] == pytest.approx(10.0) and sim.faults.seen[1] == pytest.approx(20.0)
    assert sim.sensors.counters["cpu_time"][1] == pytest.approx(20.0, rel=0.02)  # b runs on
    with pytest.raises(SimError, match=r"not running \(down: its host crashed"):
        sim.start_migration(0, 1)
    with pytest.raises(SimError, match="h1 has crashed"):
        sim.start_migration(1, 0)
    with pytest.raises(SimError, match="h1 has crashed; it comes back"):
        sim.set_host_power(0, "on")
    sim.restart_vm(0, 2)
    assert sim.faults.restart_state(0) == "booting" and sim.vms.host[0] == 2
    while sim.t < 20 + RESTART_TIME + 1:
        sim.step()
    assert sim.faults.restart_state(0) == "running" and sim.sensors.counters["cpu_time"][0] > cpu_a + 0.5


def test_a_migration_to_a_host_that_crashes_is_cancelled_and_one_from_it_takes_the_vm_down():
    sim = Simulator(
        make_scenario(
            hosts=HOSTS,
            vms=[{"name": "a", "host": "h1", "memory": "6GiB"}, {"name": "b", "host": "h2", "memory": "6GiB"}],
        )
    )
    sim.step()
    sim.start_migration(0, 2)  # a: h1 -> h3
    sim.start_migration(1, 0)  # b: h2 -> h1
    sim.crash_host(0)
    assert not sim.migrations.under_way
    assert sim.faults.vm_down.tolist() == [True, False] and sim.vms.host.tolist() == [0, 1]
    assert [r.status for r in sim.migrations.log] == ["failed", "failed"]


def test_the_failure_scenario_restarts_every_vm_of_the_crashed_host_within_the_rules():
    result = run_profile(load_scenario(ROOT / "scenarios/operations/host-failure.toml"), "default")
    crash, recover = result.summary["events"]
    assert recover["kind"] == "host-recover" and recover["applied"] == 1200
    assert crash["vms_down"] == 5 and crash["restarted"] == 5
    # declared failed after the 30-s grace (and the next report), then a 30-s boot
    assert 30 + RESTART_TIME <= crash["recovery_time"] <= 30 + RESTART_TIME + 5
    assert crash["down_vm_seconds"] == pytest.approx(5 * crash["recovery_time"], rel=0.05)
    assert all(v["broken_vm_seconds"] == 0 for v in result.summary["rules"].values())
    notes = [e.reason for e in result.audit.entries if e.event == "note"]
    assert notes[0].startswith("hm2 declared failed: no report since 300 s") and notes[-1] == "hm2 reports again"
    restarts = [e for e in result.audit.entries if e.event == "finished" and e.policy == "ha-restart"]
    assert len(restarts) == 5 and all(e.status == "ok" for e in restarts)
    hosts = {e.target: e.action.split("host=")[1] for e in restarts}
    assert hosts["app"] == hosts["cache"] and hosts["web2"] != "hm1" and "hm2" not in hosts.values()
    evidence = [e for e in result.audit.entries if e.event == "finding" and e.policy == "ha-restart"]
    assert evidence and {e.action for e in evidence} == {"host-failed"} and {e.target for e in evidence} == {"hm2"}
    assert evidence[0].reason == "hm2 failed: silent since 300 s, 5 VMs on it"  # the plan rests on it


def test_without_room_the_vms_that_fit_nowhere_are_reported_once():
    scenario = make_scenario(
        hosts=[{"name": "h{i}", "count": 2, "cores": 4, "memory": "9GiB", "dom0_memory": "1GiB"}],
        vms=[
            {"name": "big{i}", "count": 2, "host": "h1", "memory": "4GiB"},
            {"name": "c", "host": "h2", "memory": "6GiB"},
        ],
        events=[{"at": 10, "kind": "host-crash", "host": "h1"}],
        scenario={"duration": 200},
        profiles={"p": {"policies": []}},
    )
    result = run_profile(scenario, "p")
    (crash,) = result.summary["events"]
    assert crash["vms_down"] == 2 and crash["restarted"] == 0 and crash["all_running_at"] is None
    notes = [e.reason for e in result.audit.entries if e.event == "note" and e.policy == "ha-restart"]
    assert len(notes) == 2 and all("no host is on, has room and keeps their rules" in n for n in notes)
    assert np.isclose(crash["down_vm_seconds"], 2 * 190, rtol=0.02)


@pytest.mark.parametrize(
    "events, message",
    [
        ([{"at": 10, "kind": "host-recover", "host": "h1"}], "host-recover of h1 at 10 s without a host-crash"),
        ([{"at": 10, "kind": "host-crash", "host": "h1"}] * 2, "host-crash of h1 at 10 s while the last one has not"),
        ([{"at": 10, "kind": "nic-up", "host": "h1"}], "nic-up of h1 at 10 s without a nic-down"),
        ([{"at": 10, "kind": "sensor-gap", "host": "h1"}], "#1.duration: a sensor-gap needs a duration above 0"),
        ([{"at": 10, "kind": "vf-fail", "host": "h1", "duration": 5}], "#1.duration: a sensor-gap needs"),
        ([{"at": 10, "kind": "host-crash", "host": "h7"}], "[[events]] #1.host: 'h7' is no host of the scenario"),
        ([{"at": 90, "kind": "drain", "host": "h1"}], "[[events]] #1.at: 90 s is not within the run (60 s)"),
        ([{"at": 1, "kind": "reboot", "host": "h1"}], "[[events]] #1.kind: got 'reboot'"),
    ],
)
def test_bad_events_are_errors_naming_their_place(events, message):
    with pytest.raises(InputError) as error:
        make_scenario(hosts=HOSTS, events=events)
    assert message in str(error.value)


@pytest.mark.parametrize("rate", [0.0, 0.5, 1.0])
def test_migrations_fail_at_the_rate_a_scenario_asks_and_the_vm_stays_on_its_source(rate):
    """The migration_failure_rate fault: each migration fails once its first pass is sent, with that
    probability (seeded); a failed one leaves the VM running where it was."""
    sim = Simulator(
        make_scenario(
            hosts=[{"name": "h{i}", "count": 2, "memory": "64GiB"}],
            vms=[{"name": "v{i}", "count": 40, "host": "h1", "memory": "1GiB"}],
            simulator={"migration_failure_rate": rate},
        )
    )
    for v in range(40):
        sim.start_migration(v, 1)
        while v in sim.migrations.under_way:
            sim.step()
    failed = [r for r in sim.migrations.log if r.status == "failed"]
    assert all(not r.moved and sim.vms.host[sim.vm_names.index(r.vm)] == 0 for r in failed)
    assert all(r.moved for r in sim.migrations.log if r.status != "failed")
    assert len(failed) == pytest.approx(40 * rate, abs=0 if rate in (0.0, 1.0) else 8)
