"""Rates derived from sensor counters agree with what the simulator did; spec defaults match the schema."""

import dataclasses

import numpy as np
import pytest

from helpers import make_scenario
from sova.analyze.load import host_loads, vm_loads
from sova.analyze.samples import window_samples
from sova.drivers.sim import SimDriver
from sova.model import scenario as S
from sova.model import scenario_fields as F
from sova.model.knowledge import Knowledge
from sova.model.placement_tracker import PlacementTracker
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


def _timed(k: Knowledge, times) -> list:
    """Snapshots of one small simulated cluster, stamped with the given times, added to k."""
    sim = Simulator(make_scenario(vms=[{"name": "a", "host": "h1"}]))
    drv = SimDriver(sim)
    snaps = []
    for t in times:
        snaps.append(dataclasses.replace(drv.observe(), time=float(t)))
        k.add(snaps[-1])
        sim.step()
    return snaps


def test_history_is_kept_by_time_with_the_snapshot_that_opens_a_full_window():
    k = Knowledge(history=60.0)
    _timed(k, range(0, 300, 2))  # every 2 s for 298 s
    assert k.snapshots[0].time == 238.0 and k.latest.time == 298.0  # 298 - 60 = 238: a 60 s window still fits
    assert k.window(60)[0].time == 238.0
    assert len(k) == 31


def test_lookups_by_time_find_the_newest_snapshot_at_or_before():
    k = Knowledge(history=1000.0)
    _timed(k, [0, 1, 2.5, 7, 10])
    assert k.at_or_before(7).time == 7 and k.at_or_before(6.99).time == 2.5 and k.at_or_before(-1) is None
    assert [s.time for s in k.since(2)] == [2.5, 7, 10]
    old, new = k.window(5)
    assert (old.time, new.time) == (2.5, 10)  # the newest at or before 10 - 5
    assert k.window(3, end=7)[0].time == 2.5


def test_a_long_history_is_compacted_and_lookups_stay_right():
    k = Knowledge(history=10.0)
    _timed(k, range(5000))
    assert len(k._snaps) < 2100  # the dropped ones are deleted now and then, not kept for ever
    assert k.at_or_before(4995.5).time == 4995 and k.snapshots[0].time == 4989


def test_a_frozen_knowledge_keeps_what_was_kept_while_the_original_goes_on():
    k = Knowledge(history=10.0)
    _timed(k, range(30))
    frozen = k.frozen()
    _timed(k, range(30, 80))  # the original moves on and compacts its history
    assert [s.time for s in frozen.snapshots] == list(range(19, 30)) and frozen.latest.time == 29
    assert frozen.window(5)[1].time == 29 and k.latest.time == 79
    assert frozen.rules is not k.rules and frozen.rules.rules == k.rules.rules


def test_snapshots_must_move_forward_in_time():
    k = Knowledge()
    snaps = _timed(k, [0, 5])
    with pytest.raises(ValueError, match="not newer"):
        k.add(snaps[0])


def _without(snap, gone: str):
    """The snapshot as a driver reports it once VM `gone` is deleted (or its host's daemon is away)."""
    from sova.model.snapshot import VmCounters
    from sova.model.snapshot_align import _VM_FIELDS, _VM_FIELDS_OBJECT

    keep = np.array([name != gone for name in snap.vms])
    index = np.cumsum(keep) - 1
    changes = {name: getattr(snap, name)[keep] for name in (*_VM_FIELDS, "vm_host")}
    for name in ("vm_memory_held", "vm_mips", "vm_disk_local"):  # what a driver may not report
        if getattr(snap, name) is not None:
            changes[name] = getattr(snap, name)[keep]
    for name in _VM_FIELDS_OBJECT:
        values = np.asarray(getattr(snap, name), dtype=object)[keep]
        changes[name] = tuple(values) if isinstance(getattr(snap, name), tuple) else values.astype(bool)
    counters = {f.name: getattr(snap.counters, f.name)[keep] for f in dataclasses.fields(VmCounters)}
    flows = keep[np.maximum(snap.flow_src, 0)] & ((snap.flow_dst < 0) | keep[np.maximum(snap.flow_dst, 0)])
    return dataclasses.replace(
        snap,
        vms=tuple(n for n in snap.vms if n != gone),
        counters=VmCounters(**counters),
        flow_src=index[snap.flow_src[flows]],
        flow_dst=np.where(snap.flow_dst[flows] >= 0, index[np.maximum(snap.flow_dst[flows], 0)], -1),
        flow_bytes=snap.flow_bytes[flows],
        **changes,
    )


def _busy_pair():
    sim = Simulator(
        make_scenario(
            hosts=[{"name": "h1", "cores": 8}],
            vms=[{"name": n, "host": "h1", "vcpus": 2} for n in ("a", "b", "c")],
            workloads=[
                {"vm": "a", "kind": "lookbusy", "util": 0.5},
                {"vm": "b", "kind": "lookbusy", "util": 1.0},
                {"vm": "c", "kind": "lookbusy", "util": 0.25},
            ],
        )
    )
    return sim, SimDriver(sim)


def test_a_vm_that_goes_leaves_every_other_vms_history_as_it_was():
    sim, drv = _busy_pair()
    k = Knowledge()
    for t in range(30):
        snap = drv.observe()
        k.add(snap if t < 20 else _without(snap, "b"))  # b is deleted at 20 s
        sim.step()
    assert len(k) == 30  # nothing was thrown away
    assert k.latest.vms == ("a", "c")
    assert k.vm_cpu_cores(25) == pytest.approx([1.005, 0.505])  # over 25 s, across the change


def test_a_vm_that_comes_counts_as_idle_before_it_came():
    sim, drv = _busy_pair()
    k = Knowledge()
    for t in range(30):
        snap = drv.observe()
        k.add(_without(snap, "c") if t < 20 else snap)  # c appears at 20 s
        sim.step()
    rates = dict(zip(k.latest.vms, k.vm_cpu_cores(20), strict=True))
    assert rates["a"] == pytest.approx(1.005) and rates["b"] == pytest.approx(2.0)
    assert rates["c"] == pytest.approx(0.505 * 9 / 20)  # its 9 s since it came, over the 20 s window
    assert window_samples(k, 20).gotten.shape[1] == 3


@pytest.mark.parametrize(
    ("spec", "fields", "skip"),
    [
        (S.TopologySpec, F.TOPOLOGY_FIELDS, ()),
        (S.NicSpec, F.NIC_FIELDS, ()),
        (S.HostSpec, F.HOST_FIELDS, ("name", "count", "start", "nic")),
        (S.VmSpec, F.VM_FIELDS, ("name", "count", "start", "files", "block", "host")),
        (S.ControlSpec, F.CONTROL_FIELDS, ()),
        (S.OutputSpec, F.OUTPUT_FIELDS, ()),
    ],
)
def test_spec_dataclass_defaults_match_the_schema(spec, fields, skip):
    """The typed specs restate the schema's defaults; this keeps the two from drifting apart."""
    declared = {f.name: f.default for f in dataclasses.fields(spec) if f.default is not dataclasses.MISSING}
    declared |= {
        f.name: f.default_factory() for f in dataclasses.fields(spec) if f.default_factory is not dataclasses.MISSING
    }
    for key, field in fields.items():
        if key in skip:
            continue
        assert declared[key] == field.default, key


def test_a_vm_missing_from_a_report_mid_migration_counts_as_moved_when_it_comes_back_elsewhere():
    first = observed(1, hosts=[{"name": "h1"}, {"name": "h2"}], vms=[{"name": "a"}, {"name": "b"}]).latest
    tracker = PlacementTracker()
    tracker.observe(first)
    keep = np.arange(1, len(first.vms))  # the first VM is missing from the next report
    missing = dataclasses.replace(
        first,
        time=first.time + 1,
        vms=first.vms[1:],
        vm_host=first.vm_host[keep],
        counters=type(first.counters)(**{k: v[keep] for k, v in vars(first.counters).items()}),
    )
    tracker.observe(missing)
    moved_host = (first.vm_host.copy() + 1) % len(first.hosts)
    back = dataclasses.replace(first, time=first.time + 2, vm_host=moved_host)
    tracker.observe(back)
    vm = first.vms[0]
    assert tracker.vm_arrived[vm] == first.time + 2
    assert tracker.host_sent[first.hosts[first.vm_host[0]]] == first.time + 2


def test_the_history_keeps_each_unchanged_column_once_and_read_only():
    k = observed(
        seconds=5,
        hosts=[{"name": "h1", "cores": 8}],
        vms=[{"name": "a", "host": "h1", "vcpus": 4}, {"name": "b", "host": "h1", "vcpus": 2}],
        workloads=[{"vm": "a", "kind": "lookbusy", "util": 0.5}],
    )
    older, newer = k.snapshots[-2:]
    assert newer.vms is older.vms and newer.vm_vcpus is older.vm_vcpus and newer.host_cores is older.host_cores
    assert newer.counters.cpu_time is not older.counters.cpu_time  # a's CPU time moved on
    assert not np.array_equal(newer.counters.cpu_time, older.counters.cpu_time)
    with pytest.raises(ValueError, match="read-only"):
        newer.vm_vcpus[0] = 8  # it would change every snapshot that shares it
    assert k.vm_cpu_cores(4) == pytest.approx([2.005, 0.005], rel=1e-3)


def test_a_shared_snapshot_equals_the_one_observed_field_by_field():
    from sova.model.snapshot_sharing import share_unchanged

    k = observed(seconds=1, hosts=[{"name": "h1", "cores": 8}], vms=[{"name": "a", "host": "h1", "vcpus": 4}])
    previous = k.latest
    moved = dataclasses.replace(previous, time=previous.time + 1, vm_vcpus=previous.vm_vcpus.astype(np.int64))
    shared = share_unchanged(moved, previous)
    assert shared.vm_vcpus is moved.vm_vcpus  # equal values of another dtype are not the same column
    for field in dataclasses.fields(shared):
        if field.name != "counters":
            assert np.array_equal(getattr(shared, field.name), getattr(moved, field.name)), field.name
    assert shared.time == previous.time + 1 and shared.vm_position == previous.vm_position
