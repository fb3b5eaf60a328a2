"""The simulator's physics and operations, end to end through its step loop."""

import tarfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import ROOT, make_scenario
from sova.experiments.scenario_runs import run_scenario
from sova.sim.engine import Simulator
from sova.sim.records import SimError
from sova.sim.traces import TraceError, read_bitbrains, read_planetlab


def steps(sim, n):
    for _ in range(n):
        sim.step()


def test_same_seed_same_summary_and_another_seed_differs():
    kw = dict(
        hosts=[{"name": "h{i}", "count": 2, "cores": 4}],
        vms=[{"name": "v{i}", "count": 6, "vcpus": 2}],
        workloads=[
            {"vm": "v*", "kind": "lookbusy", "duty": 0.5},
            {"vm": "v1", "kind": "netperf", "peer": "v2", "duty": 0.5},
        ],
        profiles={"default": {}, "t": {"policies": ["threshold-migration"]}},
        scenario={"duration": 300},
    )

    def summary(seed):
        s = make_scenario(scenario={"duration": 300, "seed": seed}, **{k: v for k, v in kw.items() if k != "scenario"})
        return [{k: v for k, v in r.summary.items() if k not in ("wall_seconds", "speed")} for r in run_scenario(s)]

    assert summary(3) == summary(3)
    assert summary(3) != summary(4)


@st.composite
def fabrics(draw):
    n_hosts = draw(st.integers(2, 8))
    n_vms = draw(st.integers(2, 12))
    flows = draw(
        st.lists(
            st.tuples(st.integers(1, n_vms), st.integers(0, n_vms), st.sampled_from(["0", "500Mbps", "3Gbps"])),
            min_size=1,
            max_size=10,
        )
    )
    nic = draw(st.lists(st.sampled_from(["vnic", "vf"]), min_size=n_vms, max_size=n_vms))
    return n_hosts, n_vms, flows, nic


@given(fabrics())
def test_no_link_nic_or_vf_cap_is_exceeded(case):
    n_hosts, n_vms, flows, nic = case
    s = make_scenario(
        topology={"kind": "fat-tree", "k": 4, "link_speed": "1Gbps"},
        hosts=[{"name": "h{i}", "count": n_hosts}],
        vms=[{"name": f"v{i + 1}", "nic": nic[i], "vf_rate": "400Mbps", "memory": 512} for i in range(n_vms)],
        workloads=[
            {"vm": f"v{a}", "kind": "netperf", "peer": f"v{b}" if b else "external", "rate": r, "stagger": False}
            for a, b, r in flows
        ],
    )
    sim = Simulator(s)
    steps(sim, 2)
    data = sim.network._flow_by_resource.data
    load = sim.network.load(sim.network.rate, data)
    cap = sim.network.capacities(sim.sensors.gauges["dom0_alloc"])
    assert (load <= cap * (1 + 1e-7) + 1e-6).all()
    assert (sim.network.rate >= 0).all()


def test_cpu_weights_are_honoured_under_contention():
    s = make_scenario(
        hosts=[{"name": "h1", "cores": 2}],
        vms=[
            {"name": "a", "host": "h1", "vcpus": 2, "weight": 256},
            {"name": "b", "host": "h1", "vcpus": 2, "weight": 512},
        ],
        workloads=[{"vm": "*", "kind": "lookbusy"}],
    )
    sim = Simulator(s)
    steps(sim, 10)
    a, b = sim.sensors.counters["cpu_time"]
    assert b / a == pytest.approx(2.0, rel=0.02)
    assert a + b + sim.sensors.counters["dom0_cpu_time"][0] == pytest.approx(2 * 10, rel=1e-6)


def test_cpu_cap_limits_a_vm():
    s = make_scenario(
        vms=[{"name": "a", "host": "h1", "vcpus": 4, "cap": 1.5}], workloads=[{"vm": "a", "kind": "lookbusy"}]
    )
    sim = Simulator(s)
    steps(sim, 10)
    assert sim.sensors.counters["cpu_time"][0] == pytest.approx(15.0)


def _pair(same_host: bool, nic: str):
    s = make_scenario(
        hosts=[{"name": "h{i}", "count": 2, "cores": 16}],
        vms=[{"name": "a", "host": "h1", "nic": nic}, {"name": "b", "host": "h1" if same_host else "h2", "nic": nic}],
        workloads=[{"vm": "a", "kind": "netperf", "peer": "b"}],
    )
    sim = Simulator(s)
    steps(sim, 3)
    return sim


def test_vm_to_vm_traffic_on_one_host_is_bounded_by_the_dom0_bridge():
    local, remote = _pair(True, "vnic"), _pair(False, "vnic")
    assert local.network.rate[0] < 0.6 * remote.network.rate[0]
    assert local.sensors.gauges["dom0_alloc"][0] == pytest.approx(2.0)  # Dom0's two vCPUs are the bottleneck
    assert local.sensors.counters["nic_tx_bytes"][0] == 0  # the bridge never touches the NIC


def test_vf_traffic_bypasses_dom0():
    sim = _pair(False, "vf")
    assert sim.sensors.counters["dom0_cpu_time"].sum() == 0
    assert sim.sensors.counters["vnic_tx_bytes"][0] == 0  # Dom0 sees nothing on the vNIC
    assert sim.sensors.counters["guest_tx_bytes"][0] > 1e9  # the guest's /proc/net/dev sees it all


def test_vf_hotplug_moves_traffic_without_loss_and_frees_the_vf_after_unplug():
    s = make_scenario(
        hosts=[{"name": "h{i}", "count": 2, "nic": {"max_vfs": 1}}],
        vms=[{"name": "a", "host": "h1"}, {"name": "b", "host": "h2"}, {"name": "c", "host": "h1"}],
        workloads=[{"vm": "a", "kind": "netperf", "peer": "b", "rate": "1Gbps"}],
        scenario={"step": 0.1},
    )
    sim = Simulator(s)
    sim.attach_vf(0, 2e9)
    assert sim.vfs.state(0) == "attaching"
    with pytest.raises(SimError, match="already has a VF"):
        sim.attach_vf(0, 1e9)
    with pytest.raises(SimError, match="no free VF"):
        sim.attach_vf(2, 1e9)
    steps(sim, 3)
    assert sim.vfs.state(0) == "attached"
    vnic_before = sim.sensors.counters["vnic_tx_bytes"][0]
    steps(sim, 10)
    assert sim.sensors.counters["vnic_tx_bytes"][0] == vnic_before  # traffic left the vNIC
    sim.vfs.detach(0, sim.t)
    assert sim.vfs.state(0) == "detaching"
    with pytest.raises(SimError, match="no free VF"):
        sim.attach_vf(2, 1e9)  # the VF is held until the device-removed event
    guest_before = sim.sensors.counters["guest_tx_bytes"][0]
    steps(sim, 16)
    assert sim.vfs.state(0) == "none" and sim.vfs.used[0] == 0
    # the stream never paused: 1.6 s at 1 Gb/s went through the standby vNIC
    assert sim.sensors.counters["guest_tx_bytes"][0] - guest_before == pytest.approx(1e9 / 8 * 1.6, rel=1e-6)
    sim.attach_vf(2, 1e9)


def test_migration_requires_detached_vf_and_free_memory():
    s = make_scenario(
        hosts=[{"name": "h1"}, {"name": "h2", "memory": "8GiB", "dom0_memory": "4GiB"}],
        vms=[
            {"name": "a", "host": "h1", "nic": "vf", "memory": "2GiB"},
            {"name": "big", "host": "h1", "memory": "6GiB"},
        ],
    )
    sim = Simulator(s)
    with pytest.raises(SimError, match="detach it before migrating"):
        sim.start_migration(0, 1)
    with pytest.raises(SimError, match="needs 6144 MiB"):
        sim.start_migration(1, 1)


def test_a_migration_moves_the_vm_with_a_downtime_and_bytes_from_the_model():
    s = make_scenario(
        hosts=[{"name": "h{i}", "count": 2}], vms=[{"name": "a", "host": "h1", "memory": "4GiB", "dirty_rate": "100MB"}]
    )
    sim = Simulator(s)
    sim.start_migration(0, 1)
    steps(sim, 20)
    (rec,) = sim.migrations.log
    assert rec.status == "completed" and sim.vms.host[0] == 1
    assert rec.bytes > 4 * 2**30  # memory plus re-sent dirty pages
    assert 0 < rec.downtime < 0.3 + 0.02 + 1e-9
    assert sim.sensors.counters["dom0_cpu_time"].min() > 0  # both ends paid CPU for the stream


def _migrating(simulator: dict, dirty="300MB"):
    """A 2 GiB VM dirtying memory faster than its 1 Gb/s link carries it, migrating from h1 to h2."""
    s = make_scenario(
        topology={"link_speed": "1Gbps"},
        hosts=[{"name": "h{i}", "count": 2}],
        vms=[{"name": "a", "host": "h1", "memory": "2GiB", "dirty_rate": dirty}],
        workloads=[{"vm": "a", "kind": "lookbusy", "util": 1.0}],
        simulator=simulator,
    )
    sim = Simulator(s)
    sim.start_migration(0, 1)
    return sim


@pytest.mark.parametrize(
    ("options", "status", "host"),
    [
        ({"migration_max_rounds": 29}, "not-converged", 1),
        ({"migration_timeout": "40.5s"}, "timed-out", 0),
        ({"migration_timeout": "40.5s", "migration_timeout_action": "suspend"}, "not-converged", 1),
        ({"migration_auto_converge": True}, "completed", 1),
        ({"migration_postcopy": True}, "completed", 1),
    ],
)
def test_a_migration_that_cannot_converge_ends_as_qemu_would_and_says_so(options, status, host):
    sim = _migrating(options)
    while not sim.migrations.log and sim.t < 600:
        sim.step()
    (rec,) = sim.migrations.log
    assert rec.status == status and sim.vms.host[0] == host and rec.moved == (host == 1)
    assert rec.finished - rec.started != pytest.approx(round(rec.finished - rec.started))  # not rounded to steps
    if status == "timed-out":
        assert rec.finished - rec.started == pytest.approx(40.5) and rec.downtime == 0
    if "migration_timeout_action" in options:  # suspended at 40.5 s, then all dirty memory copied while paused
        assert rec.finished - rec.started == pytest.approx(40.5 + rec.downtime)


def test_a_migrations_flow_counts_exactly_the_bytes_the_migration_sent():
    s = make_scenario(
        hosts=[{"name": "h{i}", "count": 2}],
        vms=[{"name": "a", "host": "h1", "memory": "1GiB"}, {"name": "b", "host": "h1"}, {"name": "c", "host": "h2"}],
        workloads=[{"vm": "b", "kind": "netperf", "peer": "c", "rate": "1Gbps"}],
    )
    sim = Simulator(s)
    steps(sim, 3)
    sim.start_migration(0, 1)
    steps(sim, 20)
    (rec,) = sim.migrations.log
    mig_flow = len(sim.network.flows) - 1
    assert sim.sensors.flow_bytes[mig_flow] == pytest.approx(rec.bytes, rel=1e-9)


def test_without_a_cap_a_migration_that_cannot_converge_keeps_running():
    sim = _migrating({})
    steps(sim, 300)
    assert not sim.migrations.log and sim.migrations.state(0) == "running"


def test_auto_converge_slows_the_guest_it_throttles():
    sim = _migrating({"migration_auto_converge": True})
    while sim.migrations.under_way[0][0].throttle < 0.3:
        sim.step()
    start = sim.sensors.counters["cpu_time"][0]
    sim.step()
    assert sim.sensors.counters["cpu_time"][0] - start == pytest.approx(1.0 - 0.3, abs=0.02)  # one vCPU, 30 % taken


def test_a_migration_in_post_copy_cannot_be_cancelled():
    sim = _migrating({"migration_postcopy": True})
    while sim.vms.host[0] == 0:
        sim.step()
    assert sim.migrations.state(0) == "running"
    assert not sim.cancel_migration(0) and sim.migrations.state(0) == "running"


def test_saturated_ssd_shares_device_time_and_latency_rises():
    def run(iops):
        s = make_scenario(
            storage=[{"name": "ssd1"}],
            vms=[{"name": "a", "host": "h1"}, {"name": "b", "host": "h1"}],
            workloads=[
                {"vm": "a", "kind": "fio", "iops": iops, "size": "4KB"},
                {"vm": "b", "kind": "fio", "iops": iops, "size": "64KB"},
            ],
        )
        sim = Simulator(s)
        steps(sim, 10)
        return sim

    light, heavy = run(1000), run(200_000)
    assert light.sensors.counters["blk_rd_ops"].sum() + light.sensors.counters["blk_wr_ops"].sum() == pytest.approx(
        2000 * 10
    )

    def lat(sim):
        counters = sim.sensors.counters
        return counters["blk_time"] / (counters["blk_rd_ops"] + counters["blk_wr_ops"])

    assert (lat(heavy) > 5 * lat(light)).all()
    util = heavy.sensors.gauges["storage_util"][0]
    assert util == pytest.approx(1.0, rel=1e-6)
    ops = heavy.sensors.counters["blk_rd_ops"][:2] + heavy.sensors.counters["blk_wr_ops"][:2]
    share = ops * np.array([100e-6 + 4000 / 4e9 * 8, 100e-6 + 64000 / 4e9 * 8])
    assert share[0] == pytest.approx(share[1], rel=0.02)  # equal device time, up to the completions' variation


def test_planetlab_replay_follows_the_trace():
    f = sorted((ROOT / "scenarios" / "traces" / "planetlab").iterdir())[0]
    s = make_scenario(
        vms=[{"name": "a", "host": "h1", "vcpus": 2}],
        workloads=[{"vm": "a", "kind": "planetlab", "file": str(f), "interval": 10}],
        scenario={"duration": 50},
    )
    sim = Simulator(s)
    steps(sim, 50)
    expected = sum(int(x) / 100 * 2 * 10 for x in f.read_text().split()[:5])
    assert sim.sensors.counters["cpu_time"][0] == pytest.approx(expected, rel=0.02)


@pytest.mark.parametrize("archived", [False, True])
def test_bitbrains_replay_drives_cpu_network_and_disk(tmp_path, archived):
    csv = ROOT / "tests" / "fixtures" / "bitbrains-rnd-2013-7-vm1.csv"
    spec = str(csv)
    if archived:  # the form of the published archive: a member of a .tar.gz
        with tarfile.open(tmp_path / "rnd.tar.gz", "w:gz") as tar:
            tar.add(csv, arcname="rnd/2013-7/1.csv")
        spec = f"{tmp_path / 'rnd.tar.gz'}:rnd/2013-7/1.csv"
    s = make_scenario(
        storage=[{"name": "s1"}],
        vms=[{"name": "a", "host": "h1", "vcpus": 2, "memory": "8GiB"}],
        workloads=[{"vm": "a", "kind": "bitbrains", "file": spec}],
        scenario={"duration": 900},
    )
    sim = Simulator(s)
    steps(sim, 900)
    trace = read_bitbrains(spec)
    assert sim.sensors.counters["cpu_time"][0] == pytest.approx(trace.cpu[:3].sum() * 300 * 2 + 0.005 * 900, rel=0.02)
    net = (trace.net_rx[:3] + trace.net_tx[:3]).sum() * 300
    assert sim.sensors.counters["guest_rx_bytes"][0] + sim.sensors.counters["guest_tx_bytes"][0] == pytest.approx(
        net, rel=1e-6
    )
    disk = (trace.disk_read[:3] + trace.disk_write[:3]).sum() * 300
    assert sim.sensors.counters["blk_rd_bytes"][0] + sim.sensors.counters["blk_wr_bytes"][0] == pytest.approx(
        disk, rel=1e-6
    )


@pytest.mark.parametrize("step", [60, 300, 900, 3600])
def test_a_trace_study_at_coarse_steps_uses_the_same_cpu_as_at_one_minute(step):
    """Trace values are read at their own sampling (300 s): a longer step takes the mean of what it covers."""
    files = sorted((ROOT / "scenarios" / "traces" / "planetlab").iterdir())[:3]

    def cpu_seconds(step_s: float) -> np.ndarray:
        sim = Simulator(
            make_scenario(
                scenario={"duration": 86400, "step": step_s},
                hosts=[{"name": "h1", "cores": 8}],
                vms=[{"name": f"v{i}", "host": "h1"} for i in range(len(files))],
                workloads=[{"vm": f"v{i}", "kind": "planetlab", "file": str(f)} for i, f in enumerate(files)],
            )
        )
        steps(sim, round(86400 / step_s))
        return sim.sensors.counters["cpu_time"]

    assert cpu_seconds(step) == pytest.approx(cpu_seconds(60), rel=1e-9)


def test_a_coarse_step_under_workloads_that_need_fine_ones_is_a_warning():
    from sova.model.plausibility import warnings

    web = make_scenario(
        scenario={"step": 300, "duration": 3600},
        vms=[{"name": "a", "host": "h1"}],
        workloads=[{"vm": "a", "kind": "httperf"}],
    )
    burn = make_scenario(
        scenario={"step": 300, "duration": 3600},
        vms=[{"name": "a", "host": "h1"}],
        workloads=[{"vm": "a", "kind": "lookbusy"}],
    )
    assert any("300 s steps with httperf" in str(w) for w in warnings(web))
    assert not any("steps" in str(w) for w in warnings(burn))


def test_guest_memory_in_use_comes_from_the_workloads_and_the_observation_shows_it():
    from sova.drivers.sim import SimDriver

    s = make_scenario(
        hosts=[{"name": "h1", "memory": "64GiB"}],
        vms=[{"name": n, "host": "h1", "memory": "4GiB"} for n in ("app", "both", "idle", "huge")],
        workloads=[
            {"vm": "app", "kind": "lookbusy", "memory_used": "1GiB"},
            {"vm": "both", "kind": "lookbusy", "memory_used": "1GiB"},
            {"vm": "both", "kind": "httperf", "memory_used": "512MiB"},
            {"vm": "huge", "kind": "lookbusy", "memory_used": "8GiB"},
        ],
    )
    snap = SimDriver(Simulator(s)).observe()
    used = dict(zip(snap.vms, snap.vm_memory_used, strict=True))
    assert used == {"app": 1024, "both": 1536, "idle": 4096 * 0.4, "huge": 4096}  # idle: the default share


def test_a_workload_using_more_memory_than_its_vm_is_a_warning():
    from sova.model.plausibility import warnings

    s = make_scenario(
        vms=[{"name": "a", "host": "h1", "memory": "1GiB"}, {"name": "b1", "host": "h1", "memory": "1GiB"}],
        workloads=[
            {"vm": "a", "kind": "lookbusy", "memory_used": "2GiB"},
            {"vm": "b*", "kind": "lookbusy", "memory_used": "3GiB"},  # a pattern names the VMs too
        ],
    )
    assert any("2,048 MiB in use on a 1,024 MiB VM (and 1 more)" in str(w) for w in warnings(s))


def _planetlab_set(tmp_path, count: int):
    """A directory and a .tar.gz of `count` PlanetLab traces, trace k at a constant k * 10 %."""
    folder = tmp_path / "set"
    folder.mkdir()
    for k in range(1, count + 1):
        (folder / f"node{k:02d}").write_text(f"{k * 10}\n" * 12)
    archive = tmp_path / "set.tar.gz"
    (tmp_path / "._node01").write_bytes(b"\x00\x05\x16\x07")  # macOS metadata, as archives made on a Mac hold
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "._node01", arcname="day/._node01")
        for k in range(1, count + 1):
            tar.add(folder / f"node{k:02d}", arcname=f"day/node{k:02d}")
    return folder, archive


@pytest.mark.parametrize("form", ["directory", "archive"])
def test_a_trace_set_maps_one_trace_onto_each_vm_of_one_entry(tmp_path, monkeypatch, form):
    folder, archive = _planetlab_set(tmp_path, 5)
    opened = []
    real_open = tarfile.open
    monkeypatch.setattr(tarfile, "open", lambda *a, **k: opened.append(a[0]) or real_open(*a, **k))
    sim = Simulator(
        make_scenario(
            hosts=[{"name": "h1", "cores": 8}],
            vms=[{"name": "pl{i}", "count": 4, "host": "h1"}],
            workloads=[{"vm": "pl*", "kind": "planetlab", "file": str(folder if form == "directory" else archive)}],
        )
    )
    steps(sim, 10)
    assert sim.sensors.counters["cpu_time"] == pytest.approx([10 * (0.1 * k + 0.005) for k in range(1, 5)])
    assert len(opened) == (2 if form == "archive" else 0)  # listed once, read once: not once per VM


def test_a_trace_set_with_fewer_traces_than_vms_names_the_entry_and_the_counts(tmp_path):
    folder, _ = _planetlab_set(tmp_path, 2)
    s = make_scenario(
        vms=[{"name": "pl{i}", "count": 3, "host": "h1"}],
        workloads=[{"vm": "pl*", "kind": "planetlab", "file": str(folder)}],
    )
    with pytest.raises(TraceError, match=r"\[\[workloads\]\] #1.file: .*set holds 2 trace\(s\) for 3 VMs"):
        Simulator(s)


def test_vm_demand_in_mips_takes_its_share_of_heterogeneous_cores():
    """CloudSim's PlanetLab set-up: 1,860- and 2,660-MIPS cores; a 1,000-MIPS vCPU at 100 % uses 1000/1860
    and 1000/2660 of a core; a host given in GHz counts 1,000 MIPS per GHz; a VM without MIPS uses a core."""
    sim = Simulator(
        make_scenario(
            hosts=[
                {"name": "g4", "cores": 2, "mips": 1860},
                {"name": "g5", "cores": 2, "mips": 2660},
                {"name": "ghz", "cores": 2, "ghz": 2.0},
            ],
            vms=[
                {"name": "a", "host": "g4", "mips": 1000},
                {"name": "b", "host": "g5", "mips": 1000},
                {"name": "c", "host": "ghz", "mips": 1000},
                {"name": "d", "host": "g5"},
            ],
            workloads=[{"vm": "*", "kind": "lookbusy", "util": 1.0}],
        )
    )
    steps(sim, 10)
    per_s = sim.sensors.counters["cpu_time"] / 10 - 0.005  # less the idle guest's timer ticks
    assert per_s == pytest.approx([1000 / 1860, 1000 / 2660, 0.5, 1.0 - 0.005], rel=1e-6)  # d: capped at its vCPU


def test_malformed_traces_name_the_file_and_line(tmp_path):
    bad = tmp_path / "pl"
    bad.write_text("12\n7x\n")
    with pytest.raises(TraceError, match=r"pl: line 2: expected a CPU percentage, got '7x'"):
        read_planetlab(str(bad))
    short = tmp_path / "bb.csv"
    short.write_text("Timestamp [ms];x\n1;2;3\n")
    with pytest.raises(TraceError, match=r"bb.csv: line 2: expected 11 ';'-separated columns, got 3"):
        read_bitbrains(str(short))


def test_overloaded_web_server_drops_requests_past_the_client_timeout():
    s = make_scenario(
        vms=[{"name": "web", "host": "h1", "vcpus": 1}],
        workloads=[{"vm": "web", "kind": "httperf", "rate": 30000, "cpu_per_request": "100us", "timeout": 2}],
        scenario={"duration": 30},
    )
    (r,) = run_scenario(s)
    svc = r.services[0]
    assert svc["dropped"] > 0
    # one vCPU serves at most 10,000 req/s; its TCP stack takes a little of it
    assert 0.85 * 30 / 100e-6 < svc["served"] <= 30 / 100e-6
    assert svc["response_mean"] > 1.0  # requests queue for seconds


def test_a_web_server_answers_later_once_its_neighbours_vcpus_outnumber_the_threads():
    """Each request wakes the server's vCPU, which waits for a thread: wake_wait once the other vCPUs fill
    the host's 4 threads, and wake_wait_over per runnable vCPU per thread beyond (6 busy: 0.5 past)."""

    def response(busy_vcpus: int) -> float:
        s = make_scenario(
            hosts=[{"name": "h1", "cores": 4, "dom0_vcpus": 1}],
            vms=[{"name": "web", "host": "h1", "vcpus": 1}]
            + ([{"name": "burn", "host": "h1", "vcpus": busy_vcpus}] if busy_vcpus else []),
            workloads=[{"vm": "web", "kind": "httperf", "rate": 100}]
            + ([{"vm": "burn", "kind": "lookbusy", "util": 1.0}] if busy_vcpus else []),
            simulator={"sched_overhead": 0.0, "wake_wait": 0.3e-3, "wake_wait_over": 1.2e-3},
            scenario={"duration": 20},
        )
        (r,) = run_scenario(s)
        return r.services[0]["response_mean"]

    idle = response(0)
    assert response(6) - idle == pytest.approx(0.3e-3 + 1.2e-3 * 0.5, rel=0.05)
    assert response(2) - idle < 0.3e-3 * 0.1  # half the threads busy: all four rarely are (1/16)


def test_a_request_waits_for_the_dom0_of_a_busy_client_host_unless_the_client_has_a_vf():
    """The client's host has 6 busy vCPUs on 4 threads (x = 1.5): a request out through its vNIC and the
    response back wake that host's Dom0 forwarding thread, one wake-up wait per request; a VF skips Dom0."""

    def response(busy: bool, nic: str) -> float:
        s = make_scenario(
            hosts=[{"name": "srv", "cores": 4}, {"name": "cli", "cores": 4}],
            vms=[{"name": "web", "host": "srv"}, {"name": "client", "host": "cli", "nic": nic}]
            + ([{"name": "burn", "host": "cli", "vcpus": 6}] if busy else []),
            workloads=[{"vm": "web", "kind": "httperf", "rate": 100, "client": "client"}]
            + ([{"vm": "burn", "kind": "lookbusy", "util": 1.0}] if busy else []),
            simulator={"sched_overhead": 0.0, "wake_wait": 0.3e-3, "wake_wait_over": 1.2e-3},
            scenario={"duration": 20},
        )
        (r,) = run_scenario(s)
        return r.services[0]["response_mean"]

    rise = response(True, "vnic") - response(False, "vnic")
    assert rise == pytest.approx(0.3e-3 + 1.2e-3 * 0.5, rel=0.05)
    assert response(True, "vf") == pytest.approx(response(False, "vf"), abs=1e-6)


def test_nic_arbitrates_between_each_vf_and_the_paravirtual_path_as_a_whole():
    """One VF stream and ten vNIC streams on one 10 GbE port: the VF gets half, the vNICs share half."""
    s = make_scenario(
        hosts=[{"name": "h1", "cores": 32, "dom0_vcpus": 8}],
        vms=[{"name": "vf1", "host": "h1", "nic": "vf"}, {"name": "pv{i}", "count": 10, "host": "h1"}],
        workloads=[{"vm": "*", "kind": "netperf", "peer": "external"}],
    )
    sim = Simulator(s)
    steps(sim, 2)
    line = 10e9 * 1448 / 1538
    assert sim.network.rate[0] == pytest.approx(line / 2, rel=1e-6)
    assert sim.network.rate[1:].sum() == pytest.approx(line / 2, rel=1e-6)
    assert sim.network.rate[1:] == pytest.approx(np.full(10, line / 20), rel=1e-6)


def test_disk_traffic_follows_a_migrated_vm():
    s = make_scenario(
        hosts=[{"name": "h{i}", "count": 2}],
        storage=[{"name": "s1"}],
        vms=[{"name": "db", "host": "h1", "memory": "1GiB"}],
        workloads=[{"vm": "db", "kind": "fio", "iops": 1000, "size": "64KB", "read": 1.0}],
    )
    sim = Simulator(s)
    sim.start_migration(0, 1)
    steps(sim, 10)
    assert sim.vms.host[0] == 1
    before = sim.sensors.counters["nic_rx_bytes"].copy()
    steps(sim, 10)
    rx = sim.sensors.counters["nic_rx_bytes"] - before
    assert rx[0] == 0 and rx[1] == pytest.approx(1000 * 64000 * 10, rel=1e-6)


def test_a_duty_cycle_carries_exactly_its_share_of_traffic():
    s = make_scenario(
        hosts=[{"name": "h{i}", "count": 2}],
        vms=[{"name": "a", "host": "h1"}, {"name": "b", "host": "h2"}],
        workloads=[{"vm": "a", "kind": "netperf", "peer": "b", "rate": "1Gbps", "duty": 0.55}],
        scenario={"duration": 100},
    )
    sim = Simulator(s)
    steps(sim, 100)
    assert sim.sensors.counters["guest_tx_bytes"][0] == pytest.approx(0.55 * 100 * 1e9 / 8, rel=1e-9)


def test_a_vm_is_paused_only_for_its_downtime():
    """A 1 s step must not turn a few milliseconds of stop-and-copy into a second of lost work."""
    s = make_scenario(
        hosts=[{"name": "h{i}", "count": 2}],
        vms=[{"name": "a", "host": "h1", "memory": "4GiB", "vcpus": 1}],
        workloads=[{"vm": "a", "kind": "lookbusy"}],
    )
    sim = Simulator(s)
    sim.start_migration(0, 1)
    steps(sim, 30)
    (rec,) = sim.migrations.log
    lost = 30 * 1.0 - sim.sensors.counters["cpu_time"][0]
    assert lost == pytest.approx(rec.downtime, rel=1e-6)


def test_workload_phases_change_parameters_on_time():
    s = make_scenario(
        vms=[{"name": "a", "host": "h1", "vcpus": 2}],
        workloads=[{"vm": "a", "kind": "lookbusy", "util": 0.25, "phases": [{"at": 30, "util": 0.75}]}],
    )
    sim = Simulator(s)
    steps(sim, 30)
    first = sim.sensors.counters["cpu_time"][0]
    steps(sim, 30)
    assert first == pytest.approx(30 * (0.5 + 0.005))
    assert sim.sensors.counters["cpu_time"][0] - first == pytest.approx(30 * (1.5 + 0.005))


def test_disk_array_is_slower_and_saturates_sooner_than_ssd():
    def latency_and_iops(device):
        s = make_scenario(
            storage=[{"name": "s", "device": device}],
            vms=[{"name": "a", "host": "h1"}],
            workloads=[{"vm": "a", "kind": "fio", "iops": 5000, "size": "4KB"}],
        )
        sim = Simulator(s)
        steps(sim, 10)
        ops = sim.sensors.counters["blk_rd_ops"][0] + sim.sensors.counters["blk_wr_ops"][0]
        return sim.sensors.counters["blk_time"][0] / ops, ops / 10

    ssd_lat, ssd_iops = latency_and_iops("ssd")
    disk_lat, disk_iops = latency_and_iops("disk-array")
    assert ssd_iops == pytest.approx(5000)
    # 8 disks, saturated; the device paces its ~10,000 completions, which vary by ~1 % (cv / sqrt(n))
    assert disk_iops == pytest.approx(8 / (8e-3 + 4000 / 1.2e9 * 8 / 8), rel=0.03)
    assert disk_lat > 50 * ssd_lat


def test_incremental_routing_matches_a_full_rebuild():
    s = make_scenario(
        topology={"kind": "fat-tree", "k": 4},
        hosts=[{"name": "h{i}", "count": 8}],
        storage=[{"name": "s1"}],
        vms=[{"name": "v{i}", "count": 12, "memory": 512}],
        workloads=[
            {"vm": "v*", "kind": "netperf", "peer": "v1", "rate": "100Mbps"},
            {"vm": "v2", "kind": "fio", "iops": 100},
            {"vm": "v3", "kind": "httperf", "client": "v4"},
        ],
    )
    sim = Simulator(s)
    steps(sim, 2)
    sim.start_migration(1, 5)
    sim.attach_vf(3, 1e9)
    steps(sim, 10)
    sim.vfs.detach(3, sim.t)
    sim.start_migration(2, 6)
    steps(sim, 10)
    assert sim.vms.host[1] == 5 and sim.vms.host[2] == 6
    net = sim.network
    incremental = (net._entry_flow.copy(), net._entry_res.copy(), net._entry_base.copy(), net.flow_latency.copy())
    net._route_cache.clear()
    sim.vms.routes_dirty = True
    net.rebuild_routes()
    full = (net._entry_flow, net._entry_res, net._entry_base, net.flow_latency)
    for a, b in zip(incremental, full, strict=True):
        assert np.array_equal(a, b)


def test_a_transfer_copies_its_bytes_once_and_reports_its_time():
    s = make_scenario(
        hosts=[{"name": "h{i}", "count": 2}],
        vms=[{"name": "src", "host": "h1", "vcpus": 2}, {"name": "dst", "host": "h2"}],
        workloads=[{"vm": "src", "kind": "transfer", "size": "2GB", "peer": "dst", "start": 5, "cpu_per_byte": 0}],
        scenario={"duration": 30},
    )
    (r,) = run_scenario(s)
    t = r.summary["transfers"]
    assert t["completed"] == 1
    assert t["completion_mean"] == pytest.approx(2e9 * 8 / (10e9 * 1448 / 1538), rel=1e-3)  # at line rate


def test_a_transfer_is_bound_by_its_ciphers_cpu():
    s = make_scenario(
        hosts=[{"name": "h{i}", "count": 2}],
        vms=[{"name": "src", "host": "h1", "vcpus": 1}, {"name": "dst", "host": "h2"}],
        workloads=[{"vm": "src", "kind": "transfer", "size": "1GB", "peer": "dst", "cpu_per_byte": "10ns"}],
        scenario={"duration": 60},
    )
    (r,) = run_scenario(s)
    # one vCPU, 10 ns per byte of cipher plus the network stack: about 10 s for 1 GB, never line rate
    assert 9.5 < r.summary["transfers"]["completion_mean"] < 12


def test_the_fast_bitbrains_parser_reads_what_the_line_by_line_one_reads():
    from sova.sim.traces import _bitbrains_rows, _bitbrains_table

    texts = [
        "Timestamp [ms];\tCPU cores\n" + "1376314846;\t4;\t11703;\t10.9;\t0.1;\t67108;\t6129;\t0;\t2.1;\t0;\t0.1\n" * 3
    ]
    real = ROOT.parent / "shared" / "traces" / "bitbrains" / "gwa_t12_single_vm" / "bitbrains.csv"
    if real.exists():
        texts.append(real.read_text())
    for text in texts:
        assert _bitbrains_table(text) == pytest.approx(_bitbrains_rows(text, "t"))
    assert _bitbrains_table("1;2;3\n") is None  # not a clean table: the line-by-line parser names the line


def test_an_archive_read_again_comes_from_memory_until_the_file_changes(tmp_path):
    import tarfile

    from sova.sim.traces import read_traces

    row = "1376314846;\t{cores};\t11703;\t10.9;\t0.1;\t67108;\t6129;\t0;\t2.1;\t0;\t0.1\n"
    archive = tmp_path / "set.tar.gz"

    def write(cores: int) -> list[str]:
        member = tmp_path / "1.csv"
        member.write_text("Timestamp [ms];\tCPU cores\n" + row.format(cores=cores) * (cores + 1))
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(member, arcname="1.csv")
        return [f"{archive}:1.csv"]

    specs = write(2)
    first = read_traces("bitbrains", specs)[0]
    assert read_traces("bitbrains", specs)[0] is first  # the second run of a study parses nothing
    write(3)  # a longer file: its size changes even within the file system's time resolution
    assert read_traces("bitbrains", specs)[0].cores == 3


def test_a_coarse_step_caps_each_scaled_sample_as_fine_steps_do(tmp_path):
    trace = tmp_path / "spiky"
    trace.write_text("100\n0\n50\n10\n")  # scale 2 takes 100 % to 200 %, capped at one core

    def cpu_seconds(step_s: float) -> float:
        sim = Simulator(
            make_scenario(
                scenario={"duration": 240, "step": step_s},
                vms=[{"name": "a", "host": "h1"}],
                workloads=[{"vm": "a", "kind": "planetlab", "file": str(trace), "interval": 60, "scale": 2}],
            )
        )
        steps(sim, round(240 / step_s))
        return float(sim.sensors.counters["cpu_time"][0])

    coarse, fine = cpu_seconds(240), cpu_seconds(60)
    # equal but for the idle guest's timer ticks, which the vCPU cap cuts only in full minutes (0.45 %)
    assert coarse == pytest.approx(fine, rel=0.005)
    assert coarse < 240 * 0.005 + 60 * (2 + 0 + 1 + 0.2) - 50  # capped per sample: not 200 % for a minute
