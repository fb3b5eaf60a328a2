"""The executor's safety rails and modes, against the real simulator through the sim driver."""

import pytest

from helpers import make_scenario
from sova.control.executor import Executor
from sova.drivers.sim import SimDriver
from sova.model.actions import FAILED, OK, TIMEOUT, AttachVF, DetachVF, Migrate, SetCpu, SetVFRate
from sova.model.knowledge import Knowledge
from sova.model.scenario import ControlSpec
from sova.sim.engine import Simulator


class Rig:
    """A simulator, its driver, a Knowledge and an executor, advanced together."""

    def __init__(self, mode="auto", control=None, **sections):
        sections.setdefault("hosts", [{"name": "h{i}", "count": 3, "memory": "16GiB"}])
        sections.setdefault("vms", [{"name": "v{i}", "count": 3, "host": "h1", "memory": "2GiB"}])
        self.sim = Simulator(make_scenario(**sections))
        self.driver = SimDriver(self.sim)
        self.k = Knowledge()
        self.ex = Executor(self.driver, control or ControlSpec(), mode)
        self.k.add(self.driver.observe())

    def run(self, seconds):
        for _ in range(round(seconds / self.sim.dt)):
            self.sim.step()
            self.k.add(self.driver.observe())
            self.ex.tick(self.k)

    def events(self, event):
        return [e for e in self.ex.audit.entries if e.event == event]


def test_auto_mode_migrates_and_records_the_outcome():
    rig = Rig()
    rig.ex.submit([Migrate(vm="v1", dst="h2", reason="test", policy="p")], rig.k)
    rig.run(30)
    assert rig.sim.vms.host[0] == 1
    (done,) = rig.events("finished")
    assert done.status == OK and done.details["bytes"] > 2 * 2**30 and done.reason == "test"


def test_dry_run_records_the_plan_and_changes_nothing():
    rig = Rig(mode="dry-run")
    rig.ex.submit([Migrate(vm="v1", dst="h2"), Migrate(vm="v1", dst="h1")], rig.k)
    rig.run(10)
    assert rig.sim.vms.host[0] == 0 and not rig.sim.migrations.log
    first, second = rig.events("dry-run")
    assert "would pass" in first.message
    assert "already runs on h1" in second.message


def test_approve_mode_waits_for_a_person():
    rig = Rig(mode="approve")
    plan = rig.ex.submit([Migrate(vm="v1", dst="h2")], rig.k)
    rig.run(10)
    assert rig.sim.vms.host[0] == 0 and rig.events("pending")
    rig.ex.approve(plan, rig.k)
    rig.run(30)
    assert rig.sim.vms.host[0] == 1
    other = rig.ex.submit([Migrate(vm="v2", dst="h3")], rig.k)
    rig.ex.reject(other, "not during business hours")
    rig.run(30)
    assert rig.sim.vms.host[1] == 0
    assert rig.events("rejected")[-1].message == "not during business hours"
    with pytest.raises(KeyError, match="no plan 99 is waiting"):
        rig.ex.approve(99, rig.k)


def test_unapproved_plans_expire():
    rig = Rig(mode="approve", control=ControlSpec(approval_timeout=20))
    rig.ex.submit([Migrate(vm="v1", dst="h2")], rig.k)
    rig.run(30)
    assert rig.events("expired") and not rig.ex.pending and rig.sim.vms.host[0] == 0


def test_hold_down_stops_ping_pong():
    rig = Rig(control=ControlSpec(hold_down=120))
    rig.ex.submit([Migrate(vm="v1", dst="h2")], rig.k)
    rig.run(30)
    rig.ex.submit([Migrate(vm="v1", dst="h1")], rig.k)
    rig.run(5)
    assert rig.sim.vms.host[0] == 1
    assert "hold-down is 120 s" in rig.events("rejected")[-1].message
    rig.run(120)
    rig.ex.submit([Migrate(vm="v1", dst="h1")], rig.k)
    rig.run(30)
    assert rig.sim.vms.host[0] == 0


def test_per_host_and_cluster_migration_caps():
    rig = Rig(control=ControlSpec(max_migrations_per_host=1, max_migrations_cluster=4))
    rig.ex.submit([Migrate(vm="v1", dst="h2"), Migrate(vm="v2", dst="h3")], rig.k)
    assert "per-host cap 1" in rig.events("rejected")[0].message
    rig2 = Rig(control=ControlSpec(max_migrations_per_host=4, max_migrations_cluster=1))
    rig2.ex.submit([Migrate(vm="v1", dst="h2"), Migrate(vm="v2", dst="h3")], rig2.k)
    assert "cluster cap 1" in rig2.events("rejected")[0].message


def test_destination_memory_and_cpu_headroom_are_checked():
    rig = Rig(
        hosts=[
            {"name": "h1"},
            {"name": "small", "memory": "6GiB", "dom0_memory": "4GiB"},
            {"name": "busy", "cores": 2},
        ],
        vms=[{"name": "v1", "host": "h1", "memory": "4GiB", "vcpus": 2}, {"name": "hog", "host": "busy", "vcpus": 2}],
        workloads=[{"vm": "*", "kind": "lookbusy"}],
    )
    rig.run(12)
    rig.ex.submit([Migrate(vm="v1", dst="small"), Migrate(vm="v1", dst="busy")], rig.k)
    msgs = [e.message for e in rig.events("rejected")]
    assert "small has 2048 MiB free; v1 needs 4096 MiB" in msgs[0]
    assert "an earlier action of its plan" in msgs[1]
    rig.ex.submit([Migrate(vm="v1", dst="busy")], rig.k)
    assert "would be at" in rig.events("rejected")[-1].message


def test_vf_must_be_detached_first_and_a_plan_runs_in_order():
    rig = Rig(vms=[{"name": "v1", "host": "h1", "nic": "vf", "memory": "2GiB"}])
    rig.ex.submit([Migrate(vm="v1", dst="h2")], rig.k)
    assert "detach it first" in rig.events("rejected")[0].message
    rig.ex.submit([DetachVF(vm="v1", reason="migrating"), Migrate(vm="v1", dst="h2")], rig.k)
    rig.run(30)
    assert rig.sim.vms.host[0] == 1
    migrate_applied = next(e for e in rig.events("applied") if e.action.startswith("migrate"))
    detach_done = next(e for e in rig.events("finished") if e.action.startswith("detach-vf"))
    assert migrate_applied.time >= detach_done.time  # waited for the device-removed event


def test_a_migration_that_overruns_its_timeout_is_cancelled_and_the_vm_stays():
    rig = Rig(
        control=ControlSpec(action_timeout=5),
        topology={"link_speed": "100Mbps"},
        vms=[{"name": "v1", "host": "h1", "memory": "8GiB"}],
    )
    rig.ex.submit([Migrate(vm="v1", dst="h2")], rig.k)
    rig.run(10)
    (done,) = rig.events("finished")
    assert done.status == TIMEOUT
    assert rig.sim.vms.host[0] == 0 and not rig.sim.migrations.under_way
    assert rig.sim.migrations.log[-1].status == "cancelled"
    assert rig.sim.migrations.reserved_memory.sum() == 0  # the destination's reservation is released


def test_unknown_targets_are_rejected_with_their_name():
    rig = Rig()
    rig.ex.submit([Migrate(vm="ghost", dst="h2"), SetCpu(vm="v1", weight=512), Migrate(vm="v2", dst="mars")], rig.k)
    msgs = [e.message for e in rig.events("rejected")]
    assert msgs == ["no VM named 'ghost'", "no host named 'mars'"]
    assert rig.sim.compute.vm_weight[0] == 512


def test_driver_refusals_are_failed_outcomes_not_exceptions():
    rig = Rig()
    out = rig.driver.apply(SetVFRate(vm="v1", rate=1e9))
    assert out.status == FAILED and "no VF attached" in out.message


def test_mode_is_validated():
    with pytest.raises(ValueError, match="unknown executor mode 'yolo'"):
        Executor(None, ControlSpec(), "yolo")


def test_a_vf_being_plugged_is_counted_once_so_the_last_free_vf_can_still_be_given():
    rig = Rig(hosts=[{"name": "h1", "nic": {"max_vfs": 2}}], vms=[{"name": "v{i}", "count": 3, "host": "h1"}])
    rig.ex.submit([AttachVF(vm="v1", rate=1e9)], rig.k)
    rig.sim.step()
    rig.k.add(rig.driver.observe())  # v1 now shows 'attaching' and its VF counts as used
    rig.ex.submit([AttachVF(vm="v2", rate=1e9)], rig.k)
    rig.ex.submit([AttachVF(vm="v3", rate=1e9)], rig.k)
    rig.run(5)
    assert list(rig.sim.vms.on_vf) == [True, True, False]
    assert any("no free VF" in e.message for e in rig.events("rejected"))


def test_running_actions_on_a_host_gone_from_the_snapshot_still_count_and_do_not_stop_the_rails():
    """The destination of a running migration stops reporting and leaves the manager's view (service
    mode merges only fresh hosts): the rails go on checking other actions, and the migration still
    counts against the cluster's cap."""
    from dataclasses import replace

    from sova.service.host_report import decode, encode, merge

    rig = Rig(control=ControlSpec(max_migrations_per_host=4, max_migrations_cluster=2))
    rig.ex.submit([Migrate(vm="v1", dst="h2")], rig.k)
    assert len(rig.ex.running) == 1
    snap = rig.driver.observe()
    view = merge([decode(encode(snap, host)) for host in ("h1", "h3")])  # h2 is stale
    rig.k.add(replace(view, time=snap.time + 1))
    assert rig.ex.check(Migrate(vm="v2", dst="h3"), rig.k) is None
    assert rig.ex.check(AttachVF(vm="v2"), rig.k) is None
    rig.ex.running.append(rig.ex.running[0])  # a second migration under way: the cap of 2 is full
    assert "cluster cap 2" in rig.ex.check(Migrate(vm="v3", dst="h3"), rig.k)
