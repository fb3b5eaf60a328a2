"""CloudScope's adaptive Dom0 as a policy: a VM missing its slowdown SLO on an unsaturated host gets its
host's Dom0 weight raised to what Eq. 7 and 8 say it needs."""

from __future__ import annotations

import math

from helpers import make_scenario
from sova.control.runtime import Runtime
from sova.drivers.sim import SimDriver
from sova.model.scenario import ControlSpec
from sova.plan.adaptive_dom0 import AdaptiveDom0
from sova.sim.engine import Simulator

PARAMS = AdaptiveDom0.defaults() | {"period": 10.0, "window": 10.0}


def run(vms: list[dict], workloads: list[dict], seconds: int = 12):
    scenario = make_scenario(
        hosts=[{"name": "h1", "cores": 16, "dom0_vcpus": 1, "nic": {"bandwidth": "10Gb/s"}}],
        vms=vms,
        workloads=workloads,
    )
    sim = Simulator(scenario)
    runtime = Runtime(SimDriver(sim), [AdaptiveDom0(**PARAMS)], ControlSpec(monitor_period=1.0))
    runtime.tick()
    for _ in range(seconds):
        sim.step()
        runtime.tick()
    return sim, runtime


def test_a_busy_dom0_on_an_unsaturated_host_gets_the_weight_eq8_derives_rounded_up():
    senders = [{"name": "s{i}", "count": 4, "host": "h1", "vcpus": 2}]
    streams = [{"kind": "netperf", "vm": "s*", "peer": "external", "rate": "2Gb/s"}]
    sim, runtime = run(senders, streams)
    (entry,) = [e for e in runtime.audit.entries if e.action.startswith("set-dom0-weight") and e.event == "proposed"]
    weight = int(entry.action.split("weight=")[1])
    assert weight % 256 == 0 and sim.compute.dom0_weight[0] == weight
    assert "SLO 1.2" in entry.reason and "Dom0 needs weight" in entry.reason
    needed_then = float(entry.reason.split("needs weight ")[1].split(" ")[0])
    assert weight == math.ceil(needed_then / 256) * 256 > 256


def test_a_host_with_no_vm_missing_its_slo_keeps_its_dom0_weight():
    sim, runtime = run([{"name": "calm", "host": "h1"}], [{"kind": "lookbusy", "vm": "calm", "util": 0.5}])
    assert not any(e.action.startswith("set-dom0-weight") for e in runtime.audit.entries)
    assert sim.compute.dom0_weight[0] == 256
