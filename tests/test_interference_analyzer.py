"""The interference analyzer on the simulator: loading vectors learned from what the host reports, and
the V-slowdown it predicts for a crowded host."""

from __future__ import annotations

import pytest

from helpers import make_scenario
from sova.analyze.base import AnalyzeStage
from sova.analyze.interference import Slowdown
from sova.control.runtime import Runtime
from sova.drivers.sim import SimDriver
from sova.experiments.scenario_runs import run_profile
from sova.model.scenario import ControlSpec
from sova.model.schema import InputError
from sova.sim.engine import Simulator

SETTINGS = {"window": 20.0, "slowdown_above": 1.0}  # every VM: none is faster than alone


def findings_after(scenario, seconds: float = 30.0) -> dict[str, Slowdown]:
    sim = Simulator(scenario)
    runtime = Runtime(SimDriver(sim), [], ControlSpec(monitor_period=1.0))
    runtime.tick()
    for _ in range(round(seconds)):
        sim.step()
        runtime.tick()
    found = AnalyzeStage(runtime.knowledge).findings([("interference", SETTINGS)])
    return {f.vm: f for f in found.of(Slowdown)}


def test_each_vm_is_mostly_on_the_resource_its_workload_uses():
    found = findings_after(
        make_scenario(
            hosts=[{"name": "h1", "cores": 8}],
            storage=[{"name": "ssd"}],
            vms=[{"name": n, "host": "h1", "vcpus": 2} for n in ("burner", "reader", "sender")],
            workloads=[
                {"kind": "lookbusy", "vm": "burner", "util": 1.0},
                {"kind": "fio", "vm": "reader", "iops": 2000, "size": "64KiB", "iodepth": 4},
                {"kind": "netperf", "vm": "sender", "peer": "external"},
            ],
        )
    )
    assert found["burner"].beta_cpu > 0.99
    assert found["reader"].beta_disk > 0.5
    assert found["sender"].beta_net > 0.5
    assert all(f.slowdown >= 1.0 for f in found.values())


def test_an_oversubscribed_host_predicts_its_cpu_bound_vms_slower_by_demand_over_capacity():
    found = findings_after(
        make_scenario(
            hosts=[{"name": "h1", "cores": 8}, {"name": "h2", "cores": 8}],
            vms=[{"name": "busy{i}", "count": 6, "host": "h1", "vcpus": 2}, {"name": "calm", "host": "h2", "vcpus": 2}],
            workloads=[
                {"kind": "lookbusy", "vm": "busy*", "util": 1.0},
                {"kind": "lookbusy", "vm": "calm", "util": 0.5},
            ],
        )
    )
    busy = found["busy1"]
    # 12 vCPUs want a core each on 8 (got 8, waited 4: Σ util x vCPU = 12), Dom0 idle: p_cpu = 8/12,
    # E(K_cpu) = 1 + 1.5, γ_cpu = 2.5 / 2; the burners spend all their time on the CPU
    assert busy.gamma_cpu == pytest.approx(1.25, rel=0.01)
    assert busy.slowdown == pytest.approx(1.25, rel=0.01) and busy.notable
    assert found["calm"].slowdown == pytest.approx(1.0, abs=0.01)


def test_only_the_vms_predicted_slow_get_a_finding():
    scenario = make_scenario(
        hosts=[{"name": "h1", "cores": 8}, {"name": "h2", "cores": 8}],
        vms=[{"name": "busy{i}", "count": 6, "host": "h1", "vcpus": 2}, {"name": "calm", "host": "h2", "vcpus": 2}],
        workloads=[{"kind": "lookbusy", "vm": "busy*", "util": 1.0}, {"kind": "lookbusy", "vm": "calm", "util": 0.5}],
    )
    sim = Simulator(scenario)
    runtime = Runtime(SimDriver(sim), [], ControlSpec(monitor_period=1.0))
    runtime.tick()
    for _ in range(30):
        sim.step()
        runtime.tick()
    found = AnalyzeStage(runtime.knowledge).findings([("interference", {"window": 20.0, "slowdown_above": 1.1})])
    assert sorted(f.vm for f in found.of(Slowdown)) == [f"busy{i}" for i in range(1, 7)]
    assert all(f.notable for f in found.of(Slowdown))


def test_a_run_reports_every_vms_predicted_slowdown_with_outputs_interference():
    scenario = make_scenario(
        scenario={"duration": 30},
        hosts=[{"name": "busy", "cores": 2}, {"name": "idle", "cores": 2}],
        vms=[{"name": "hot{i}", "count": 4, "host": "busy", "vcpus": 2}, {"name": "calm", "host": "idle"}],
        workloads=[{"kind": "lookbusy", "vm": "hot*", "util": 1.0, "stagger": False}],
        outputs={"interference": 20},
    )
    report = run_profile(scenario, "default").summary["interference"]
    assert report["window"] == 20 and set(report["vms"]) == {"hot1", "hot2", "hot3", "hot4", "calm"}
    hot, calm = report["vms"]["hot1"], report["vms"]["calm"]
    assert hot["slowdown"] > 1.5 and calm["slowdown"] == pytest.approx(1.0)  # 8 vCPUs busy on 2 threads
    assert hot["beta"][0] == pytest.approx(1.0) and len(hot["gamma"]) == 3
    assert report["slowdown_max"] == max(v["slowdown"] for v in report["vms"].values())


def test_a_run_reports_per_vm_means_of_named_groups_of_vms():
    scenario = make_scenario(
        scenario={"duration": 20},
        storage=[{"name": "disk"}],
        vms=[{"name": "cpu{i}", "count": 2, "host": "h1"}, {"name": "io", "host": "h1"}],
        workloads=[
            {"kind": "sysbench", "vm": "cpu*", "prime": 5000, "threads": 1, "seconds": 2},
            {"kind": "fio", "vm": "io", "iops": 100, "size": "4KiB", "read": 1.0},
        ],
        outputs={"groups": {"cpu": "cpu*", "io": "io"}},
    )
    groups = run_profile(scenario, "default").summary["groups"]
    assert groups["cpu"]["vms"] == 2 and groups["cpu"]["batch_jobs"] == 20  # 2 s jobs, 20 s, 2 VMs
    assert groups["cpu"]["batch_completion_mean"] == pytest.approx(2.0)
    assert groups["io"]["iops"] == pytest.approx(100) and groups["io"]["io_bytes_per_s"] == pytest.approx(409_600)
    assert groups["io"]["batch_completion_mean"] is None and groups["cpu"]["iops"] == 0


def test_a_group_that_matches_no_vm_is_refused():
    with pytest.raises(InputError) as err:
        make_scenario(outputs={"groups": {"web": "web*"}})
    assert "[outputs].groups.web" in str(err.value) and "matches no VM" in str(err.value)
