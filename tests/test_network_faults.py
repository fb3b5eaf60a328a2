"""Faults short of a crash, as scenario events: a host's NIC down, its VFs failed, its reports stopped (a
sensor gap); what the manager does about them, and what the report says each cost."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import ROOT, make_scenario
from sova.control.runtime import Runtime
from sova.drivers.sim import SimDriver
from sova.experiments.scenario_runs import run_profile
from sova.model.actions import FAILED, RUNNING, AttachVF, Migrate
from sova.model.scenario import ControlSpec
from sova.model.sweep import load_scenario
from sova.sim.engine import Simulator
from sova.sim.records import SimError

HOSTS = [{"name": "h{i}", "count": 2, "cores": 8, "memory": "16GiB", "nic": {"max_vfs": 2}}]


def sim_with(vms, workloads):
    return Simulator(make_scenario(hosts=HOSTS, vms=vms, workloads=workloads))


def steps(sim, n, runtime=None):
    for _ in range(n):
        sim.step()
        if runtime is not None:
            runtime.tick()


def test_a_down_nic_cuts_its_vms_off_other_hosts_but_not_from_each_other():
    vms = [{"name": "out", "host": "h1"}, {"name": "near", "host": "h1"}, {"name": "far", "host": "h2"}]
    streams = [
        {"kind": "netperf", "vm": "out", "peer": "far", "rate": "1Gbps"},
        {"kind": "netperf", "vm": "near", "peer": "out", "rate": "1Gbps"},
    ]
    sim = sim_with(vms, streams)
    tx = sim.sensors.counters["guest_tx_bytes"]
    out, near = sim.vm_names.index("out"), sim.vm_names.index("near")

    def sent(n):
        before = tx.copy()
        steps(sim, n)
        return tx - before

    assert (sent(5)[[out, near]] > 1e8).all()
    sim.network.nic_down(0)
    cut = sent(5)
    assert cut[out] < 1e3 and cut[near] > 1e8  # across the port: nothing; inside h1: as before
    with pytest.raises(SimError, match="NIC is down already"):
        sim.network.nic_down(0)
    sim.network.nic_up_again(0)
    assert sent(5)[out] > 1e8


def test_failed_vfs_fall_back_to_the_vnic_and_none_is_offered_until_they_recover():
    sim = sim_with([{"name": "a", "host": "h1", "nic": "vf"}, {"name": "b", "host": "h1"}], [])
    driver = SimDriver(sim)
    sim.vfs.fail(0, sim.t)
    snap = driver.observe()
    assert snap.vm_nic == ("vnic", "vnic") and snap.vfs_total[0] == 0 and snap.vfs_used[0] == 0
    assert driver.apply(AttachVF(vm="b")).status == FAILED
    sim.vfs.recover(0)
    assert driver.observe().vfs_total[0] == 2 and driver.apply(AttachVF(vm="b")).status == RUNNING


def test_a_host_in_a_sensor_gap_shows_its_last_report_and_nothing_is_done_on_it():
    vms = [{"name": "busy", "host": "h1"}, {"name": "idle", "host": "h2"}]
    sim = sim_with(vms, [{"kind": "lookbusy", "vm": "busy", "util": 1.0}])
    runtime = Runtime(SimDriver(sim), [], ControlSpec(monitor_period=1.0))
    runtime.tick()
    steps(sim, 5, runtime)
    sim.faults.silence(0, 20, sim.t)
    steps(sim, 10, runtime)
    snap = runtime.knowledge.latest
    busy = snap.vm_position["busy"]
    assert snap.host_seen[0] == 5 and snap.host_seen[1] == 15
    assert snap.counters.cpu_time[busy] == runtime.knowledge.snapshots[-6].counters.cpu_time[busy]  # held
    assert sim.sensors.counters["cpu_time"][sim.vm_names.index("busy")] > snap.counters.cpu_time[busy]  # it ran on
    why = runtime.executor.check(Migrate(vm="busy", dst="h2"), runtime.knowledge)
    assert why == "h1 has not reported for 10 s"
    assert runtime.executor.check(Migrate(vm="idle", dst="h1"), runtime.knowledge) == why
    steps(sim, 12, runtime)
    assert runtime.executor.check(Migrate(vm="busy", dst="h2"), runtime.knowledge) is None


@pytest.mark.parametrize("profile", ["default", "sova"])
def test_the_faults_scenario_reports_what_each_fault_cost(profile):
    result = run_profile(load_scenario(ROOT / "scenarios" / "operations" / "faults.toml"), profile)
    events = {(e["kind"], e["at"]): e for e in result.summary["events"]}
    nic = events[("nic-down", 300.0)]
    assert nic["up_at"] == 480.0 and nic["vms_cut"] == 3 and np.isclose(nic["cut_vm_seconds"], 3 * 180)
    assert events[("vf-fail", 600.0)]["vms_fell_back"] == (2 if profile == "sova" else 0)
    short, long = events[("sensor-gap", 1200.0)], events[("sensor-gap", 1500.0)]
    assert not short["declared_failed"] and short["restarts_failed"] == 0
    # silent past the grace: declared failed, fenced (powered off: it might still run its VMs), and only then
    # are its three VMs restarted elsewhere; a host powered off does not report again
    assert long["declared_failed"] and long["fenced"] and (long["restarts"], long["restarts_failed"]) == (3, 0)
    notes = [e.reason for e in result.audit.entries if e.event == "note" and e.policy in ("failure", "fencing")]
    assert notes == ["hm4 declared failed: no report since 1500 s (31 s)", "hm4 fenced: hm4 powered off"]
    fenced_at = next(e.time for e in result.audit.entries if e.policy == "fencing")
    restarts = [e for e in result.audit.entries if e.event == "applied" and e.action.startswith("restart-vm")]
    assert restarts and min(e.time for e in restarts) > fenced_at
    assert not [e for e in result.audit.entries if e.event == "applied" and "hm4" in e.reason and "detach" in e.action]
