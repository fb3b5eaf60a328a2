"""Rates derived from sensor counters agree with what the simulator did; spec defaults match the schema."""

import dataclasses

import pytest

from helpers import make_scenario
from sova.analyze.load import host_loads, vm_loads
from sova.drivers.sim import SimDriver
from sova.model import scenario as S
from sova.model import scenario_fields as F
from sova.model.knowledge import Knowledge
from sova.sim.engine import Simulator


def observed(seconds=20, **sections):
    sim = Simulator(make_scenario(**sections))
    drv = SimDriver(sim)
    k = Knowledge()
    k.add(drv.observe())
    for _ in range(seconds):
        sim.step()
        k.add(drv.observe())
    return k


def test_cpu_rates_from_counters():
    k = observed(
        hosts=[{"name": "h1", "cores": 8}],
        vms=[{"name": "a", "host": "h1", "vcpus": 4}, {"name": "b", "host": "h1", "vcpus": 2}],
        workloads=[{"vm": "a", "kind": "lookbusy", "util": 0.5}, {"vm": "b", "kind": "lookbusy"}],
    )
    cores = k.vm_cpu_cores(10)
    assert cores == pytest.approx([2.005, 2.0], rel=1e-6)  # a: burner + idle ticks; b: full at its 2 vCPUs
    assert k.host_cpu_util(10)[0] == pytest.approx(4.005 / 8, rel=1e-6)


def test_network_rates_and_nic_utilisation_from_counters():
    k = observed(
        hosts=[{"name": "h{i}", "count": 2}],
        vms=[{"name": "a", "host": "h1"}, {"name": "b", "host": "h2"}],
        workloads=[{"vm": "a", "kind": "netperf", "peer": "b", "rate": "2Gbps"}],
    )
    assert vm_loads(k, 10)[:, 1] == pytest.approx([0.2, 0.2], rel=1e-6)  # a sends 2 Gb/s, b receives them
    assert host_loads(k, 10, 1)[-1, :, 1] == pytest.approx([0.2, 0.2], rel=1e-6)  # each host's NIC: 2 of 10 Gb/s


def test_windows_need_two_snapshots():
    k = Knowledge()
    assert k.host_cpu_util(10) is None and k.window(10) is None


@pytest.mark.parametrize(
    ("spec", "fields", "skip"),
    [
        (S.TopologySpec, F.TOPOLOGY_FIELDS, ()),
        (S.NicSpec, F.NIC_FIELDS, ()),
        (S.HostSpec, F.HOST_FIELDS, ("name", "count", "start", "nic")),
        (S.VmSpec, F.VM_FIELDS, ("name", "count", "start", "host")),
        (S.ControlSpec, F.CONTROL_FIELDS, ()),
        (S.OutputSpec, F.OUTPUT_FIELDS, ()),
    ],
)
def test_spec_dataclass_defaults_match_the_schema(spec, fields, skip):
    """The typed specs restate the schema's defaults; this keeps the two from drifting apart."""
    declared = {f.name: f.default for f in dataclasses.fields(spec) if f.default is not dataclasses.MISSING}
    for key, field in fields.items():
        if key in skip:
            continue
        assert declared[key] == field.default, key
