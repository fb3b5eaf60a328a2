"""A host's report on the bus: each host's part of a snapshot, encoded, decoded and merged, is the
snapshot; a malformed report is refused by name; over a real nats-server the manager's merge of the
agents' reports is what one observation of the whole cluster gives."""

from __future__ import annotations

import zlib
from dataclasses import fields

import numpy as np
import pytest

from helpers import make_scenario
from sova.drivers.sim import SimDriver
from sova.model.actions import OK, RUNNING, AttachVF
from sova.model.snapshot import Snapshot, VmCounters
from sova.service import host_report
from sova.service.host_report import ReportError, decode, encode, merge
from sova.sim.engine import Simulator


def busy_cluster() -> SimDriver:
    """Three hosts, VMs with flows to each other, to the outside, and one with a VF."""
    scenario = make_scenario(
        hosts=[{"name": "h1"}, {"name": "h2"}, {"name": "h3", "nic": {"sriov": False}}],
        vms=[
            {"name": "a", "host": "h1"},
            {"name": "b", "host": "h2"},
            {"name": "c", "host": "h1"},
            {"name": "d", "host": "h3"},
        ],
        workloads=[
            {"vm": "a", "kind": "netperf", "peer": "b", "rate": "2Gbps"},
            {"vm": "c", "kind": "netperf", "peer": "external", "rate": "1Gbps"},
            {"vm": "b", "kind": "netperf", "peer": "a", "rate": "500Mbps"},
            {"vm": "d", "kind": "lookbusy", "util": 0.5},
        ],
    )
    driver = SimDriver(Simulator(scenario))
    assert driver.apply(AttachVF(vm="c", rate=1e9)).status in (OK, RUNNING)
    for _ in range(5):
        driver.sim.step()
    return driver


def by_name(snap: Snapshot) -> dict:
    """The snapshot keyed by names, not positions: the merge groups VMs by host. `host_seen` is left out:
    the manager's collector knows when each report came, and the wire does not carry it (yet)."""
    order = np.argsort(snap.vms)
    view = {"time": snap.time, "hosts": snap.hosts, "vms": sorted(snap.vms)}
    view["vm_host"] = [snap.hosts[h] for h in snap.vm_host[order]]
    view["vm_nic"] = [snap.vm_nic[i] for i in order]
    for f in fields(Snapshot):
        values = getattr(snap, f.name)
        if isinstance(values, np.ndarray) and f.name not in ("vm_host", "host_seen") and not f.name.startswith("flow_"):
            view[f.name] = values[order] if f.name.startswith("vm_") else values
    view |= {f"counters.{c.name}": getattr(snap.counters, c.name)[order] for c in fields(VmCounters)}
    names = [*snap.vms, ""]
    view["flows"] = sorted(
        zip([names[i] for i in snap.flow_src], [names[i] for i in snap.flow_dst], snap.flow_bytes, strict=True)
    )
    return view


def assert_same(merged: Snapshot, snap: Snapshot) -> None:
    got, want = by_name(merged), by_name(snap)
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(got[key], value, err_msg=key)
        else:
            assert got[key] == value, key


def test_every_hosts_report_merged_is_the_snapshot_of_the_whole_cluster():
    snap = busy_cluster().observe()
    assert len(snap.flow_src) >= 3 and "vf" in snap.vm_nic  # flows across hosts, to the outside, a VF
    merged = merge([decode(encode(snap, host)) for host in snap.hosts])
    assert_same(merged, snap)


def test_a_flow_to_a_vm_no_report_holds_counts_as_leaving():
    snap = busy_cluster().observe()
    merged = merge([decode(encode(snap, host)) for host in ("h1", "h3")])  # h2's report is missing
    a_to_b = merged.flow_src == merged.vms.index("a")
    assert a_to_b.any() and (merged.flow_dst[a_to_b] == -1).all()
    assert merged.vms == ("a", "c", "d")


def test_a_report_of_twelve_vms_is_a_few_hundred_bytes():
    vms = [{"name": f"v{i}", "host": "h1"} for i in range(12)]
    snap = SimDriver(Simulator(make_scenario(vms=vms))).observe()
    assert len(encode(snap, "h1")) < 1500  # measured and reported in docs/service.md


def wrapped(body: bytes) -> bytes:
    return zlib.compress(len(body).to_bytes(4, "little") + body)


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (b"not a report", "unreadable"),
        (wrapped(b'{"v": 2}'), "expected version 1"),
        (wrapped(b'{"v": 1, "host": "h1", "vms": "a"}'), "expected a host name and a list of VM names"),
        (
            wrapped(b'{"v": 1, "host": "h1", "vms": [], "arrays": {"host_cores": ["f8", 3]}}'),
            "array host_cores runs past the end",
        ),
        (
            wrapped(b'{"v": 1, "host": "h1", "vms": [], "arrays": {"host_cores": ["x", 1]}}'),
            "array host_cores has no valid type",
        ),
    ],
)
def test_a_malformed_report_is_refused_naming_what_is_wrong(payload, error):
    with pytest.raises(ReportError, match=error):
        decode(payload)


def test_a_report_whose_arrays_disagree_with_its_vms_is_refused():
    snap = busy_cluster().observe()
    good = zlib.decompress(encode(snap, "h1"))
    size = int.from_bytes(good[:4], "little")
    header = good[4 : 4 + size].replace(b'"vms":["a","c"]', b'"vms":["a","c","x"]')
    bad = zlib.compress(len(header).to_bytes(4, "little") + header + good[4 + size :])
    with pytest.raises(ReportError, match=r"host report \(h1\): .* has 2 values, expected 3"):
        decode(bad)


def test_the_wire_version_is_checked():
    assert host_report.VERSION == 1
