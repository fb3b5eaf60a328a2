"""The libvirt driver against an injectable fake connection: every call path, errors included.

The real thing is exercised in test_lab_integration.py; these pin down the mapping from libvirt's
values to a Snapshot and from actions to libvirt calls, and what faults leave behind.
"""

from __future__ import annotations

import numpy as np
import pytest

from fake_libvirt import Cluster, FakeError, make, with_fake_channels
from sova.drivers.guest_agent import parse_report
from sova.drivers.libvirt_driver import DriverError, LibvirtDriver
from sova.drivers.vf import EmulatedVfs, SriovHost, pci_parts
from sova.model.actions import (
    CANCELLED,
    FAILED,
    OK,
    RUNNING,
    Action,
    AttachVF,
    DetachVF,
    Migrate,
    Outcome,
    RestartVM,
    SetCpu,
    SetDom0Weight,
    SetIoLimit,
    SetIoSize,
    SetNetLimit,
    SetVFRate,
)
from sova.model.io_sample import IoThrottle


def run_to_end(drv: LibvirtDriver, action: Action) -> Outcome:
    out = drv.apply(action)
    while out.status == RUNNING:
        out = drv.poll(action)
    return out


def test_observe_maps_libvirt_stats_onto_a_snapshot():
    c = Cluster()
    c.add("fake://a", "vm1")
    c.add("fake://b", "vm2", **{"vcpu.current": 1, "vcpu.1.delay": 0})
    s = make(c).observe()
    assert s.hosts == ("a", "b") and s.vms == ("vm1", "vm2")
    assert list(s.vm_host) == [0, 1]
    assert s.counters.cpu_time[0] == pytest.approx(2.0)
    assert s.counters.wait_time[0] == pytest.approx(0.15)  # both vCPUs' run-queue delay
    assert s.counters.vnic_tx_bytes[0] == 3000 and s.counters.vnic_rx_packets[0] == 10
    assert s.counters.blk_rd_ops[0] == 7 and s.counters.blk_wr_bytes[0] == 512
    assert s.counters.blk_time[0] == pytest.approx(0.003)
    assert s.vm_memory[0] == 128 and s.vm_memory_used[0] == pytest.approx(40000 / 1024)
    assert list(s.host_cores) == [4, 4] and list(s.host_memory) == [8192, 8192]
    assert s.host_cpu_time[0] == pytest.approx(8.0)
    assert s.dom0_cpu_time[0] == pytest.approx(6.0)  # the host's CPU not spent in guests
    assert s.vm_weight[0] == 1024 and s.vm_cap[0] == 0
    assert s.vm_nic == ("vnic", "vnic") and list(s.vfs_total) == [0, 0]
    # without a guest agent the guest's counters are what the host sees
    assert s.counters.guest_tx_bytes[0] == 3000


def test_a_vm_present_on_two_hosts_mid_migration_counts_once_where_it_runs():
    c = Cluster()
    c.add("fake://a", "vm1")
    c.add("fake://b", "vm1", **{"state.state": 3})  # the paused incoming copy
    s = make(c).observe()
    assert s.vms == ("vm1",) and list(s.vm_host) == [0]


def test_counters_never_go_back_when_qemu_restarts_on_a_destination():
    c = Cluster()
    d = c.add("fake://a", "vm1")
    drv = make(c)
    first = drv.observe()
    d.stats["cpu.time"] = 500_000_000  # a new QEMU process: its CPU time starts again
    d.stats["net.0.tx.bytes"] = 100  # and a new tap
    second = drv.observe()
    assert second.counters.cpu_time[0] >= first.counters.cpu_time[0]
    assert second.counters.vnic_tx_bytes[0] >= first.counters.vnic_tx_bytes[0]
    d.stats["cpu.time"] = 1_500_000_000
    third = drv.observe()
    assert third.counters.cpu_time[0] - second.counters.cpu_time[0] == pytest.approx(1.0)


def test_set_cpu_writes_shares_and_a_quota_per_vcpu():
    c = Cluster()
    d = c.add("fake://a", "vm1")
    drv = make(c)
    drv.observe()
    assert drv.apply(SetCpu(vm="vm1", weight=512, cap=1.0)).status == OK
    assert d.calls[-1] == ("sched", {"cpu_shares": 512, "vcpu_period": 100000, "vcpu_quota": 50000})
    assert drv.observe().vm_cap[0] == pytest.approx(1.0)
    drv.apply(SetCpu(vm="vm1", cap=0.0))
    assert d.calls[-1][1]["vcpu_quota"] == -1  # no cap


def test_io_and_network_limits_go_to_every_disk_and_the_vnic():
    c = Cluster()
    d = c.add("fake://a", "vm1")
    drv = make(c)
    drv.observe()
    assert drv.apply(SetIoLimit(vm="vm1", iops=200)).status == OK
    assert ("iotune", "vda", {"total_iops_sec": 200}) in d.calls
    assert drv.apply(SetNetLimit(vm="vm1", rate=8 * 1024 * 100)).status == OK
    assert ("bandwidth", "vnet0", {"outbound.average": 100, "inbound.average": 100}) in d.calls


def test_a_request_merge_limit_is_refused_with_why_and_touches_nothing():
    c = Cluster()
    d = c.add("fake://a", "vm1")
    drv = make(c)
    drv.observe()
    calls = list(d.calls)
    out = drv.apply(SetIoSize(vm="vm1", size=16384))
    assert out.status == FAILED and "max_sectors_kb" in out.message and d.calls == calls


def test_sriov_attach_uses_free_vfs_in_order_and_sets_the_rate_on_the_pf():
    c = Cluster()
    d1, d2, d3 = (c.add("fake://a", f"vm{i}") for i in (1, 2, 3))
    ran: list[list[str]] = []
    sriov = {"a": SriovHost("enp65s0f0", ["0000:41:10.0", "0000:41:10.2"], run=ran.append)}
    drv = make(c, sriov=sriov)
    drv.observe()
    assert drv.apply(AttachVF(vm="vm1", rate=500e6)).status == OK
    xml = d1.calls[-1][1]
    assert "type='hostdev'" in xml and "bus='0x41' slot='0x10' function='0x0'" in xml
    assert "<teaming type='transient' persistent='ua-net0'/>" in xml  # paired with the virtio NIC
    assert ran[-1] == ["ip", "link", "set", "enp65s0f0", "vf", "0", "max_tx_rate", "500"]
    assert drv.apply(AttachVF(vm="vm2", rate=0)).status == OK
    assert "function='0x2'" in d2.calls[-1][1]
    out = drv.apply(AttachVF(vm="vm3", rate=0))
    assert out.status == FAILED and "no free VF" in out.message and not d3.calls
    s = drv.observe()
    assert s.vm_nic == ("vf", "vf", "vnic") and s.vfs_used[0] == 2 and s.vfs_total[0] == 2
    assert drv.apply(SetVFRate(vm="vm2", rate=2e9)).status == OK
    assert ran[-1][-3:] == ["1", "max_tx_rate", "2000"]
    assert run_to_end(drv, DetachVF(vm="vm1")).status == OK
    assert not d1.devices
    assert drv.apply(AttachVF(vm="vm3", rate=0)).status == OK  # the freed VF
    assert "function='0x0'" in d3.calls[-1][1]


def test_emulated_vf_is_a_rate_limited_virtio_nic_and_says_so():
    c = Cluster()
    d = c.add("fake://a", "vm1")
    drv = make(c, emulated_vfs=EmulatedVfs(count=1, bridge="br0"))
    drv.observe()
    out = drv.apply(AttachVF(vm="vm1", rate=8 * 1024 * 1000))
    assert out.status == OK and "emulated" in out.message and "not SR-IOV" in out.message
    assert "<source bridge='br0'/>" in d.calls[-1][1] and "average='1000'" in d.calls[-1][1]


def test_migration_runs_in_the_background_and_lands_on_the_destination():
    c = Cluster()
    d = c.add("fake://a", "vm1")
    drv = make(c)
    drv.observe()
    out = run_to_end(drv, Migrate(vm="vm1", dst="b"))
    assert out.status == OK and out.details["downtime"] == 20
    assert d.calls[-1][0] == "migrate3"
    assert list(drv.observe().vm_host) == [1]


def test_a_failed_migration_leaves_the_vm_running_on_its_source_with_its_vf_back():
    c = Cluster()
    d = c.add("fake://a", "vm1")
    drv = make(c, emulated_vfs=EmulatedVfs(count=1))
    drv.observe()
    drv.apply(AttachVF(vm="vm1", rate=1e6))
    d.migrate_error = FakeError("operation failed: migration out job: unexpectedly failed")
    out = run_to_end(drv, Migrate(vm="vm1", dst="b"))
    assert out.status == FAILED and "unexpectedly failed" in out.message and "re-attached" in out.message
    assert ("resume",) in d.calls  # the stop-and-copy had paused it
    s = drv.observe()
    assert list(s.vm_host) == [0] and s.vm_nic == ("vf",)
    kinds = [k[0] for k in d.calls]
    assert kinds.index("detach") < kinds.index("migrate3") < len(kinds) - 1 - kinds[::-1].index("attach")


def test_cancel_aborts_the_migration_job():
    c = Cluster()
    d = c.add("fake://a", "vm1")
    drv = make(c)
    drv.observe()
    gate = __import__("threading").Event()
    d.migrate3 = lambda *a: (gate.wait(5), (_ for _ in ()).throw(FakeError("migration job: canceled by client")))
    d.abortJob = lambda: (d.calls.append(("abort",)), gate.set())
    action = Migrate(vm="vm1", dst="b")
    assert drv.apply(action).status == RUNNING
    out = drv.cancel(action)
    assert out.status == CANCELLED and ("abort",) in d.calls
    assert list(drv.observe().vm_host) == [0]


def test_a_vm_that_vanished_fails_its_action_instead_of_raising():
    c = Cluster()
    c.add("fake://a", "vm1")
    drv = make(c)
    drv.observe()
    del c.conns["fake://a"].doms["vm1"]
    out = drv.apply(SetIoLimit(vm="vm1", iops=10))
    assert out.status == FAILED and "vanished" in out.message
    assert drv.apply(SetCpu(vm="nope", weight=5)).status == FAILED
    assert drv.observe().vms == ()


def test_a_restarted_daemon_is_reconnected_and_an_unreachable_host_is_skipped():
    c = Cluster()
    c.add("fake://a", "vm1")
    c.add("fake://b", "vm2")
    drv = make(c)
    drv.connect()
    c.conns["fake://b"].alive = False  # the daemon went away...
    c.down.add("fake://b")
    s = drv.observe()
    assert s.vms == ("vm1",) and "refused" in drv.unreachable["b"]
    c.down.clear()  # ...and came back
    assert drv.observe().vms == ("vm1", "vm2")
    assert c.opened.count("fake://b") >= 2


def test_a_silent_host_shows_its_vms_as_last_heard_and_a_failed_hosts_vm_restarts_elsewhere():
    c = Cluster()
    c.add("fake://a", "vm1")
    c.add("fake://b", "vm2")
    drv = make(c, shared_disks=True)
    drv.connect()
    first = drv.observe()
    assert first.host_seen.tolist() == [first.time, first.time] and not first.vm_disk_local.any()
    c.conns["fake://b"].alive = False  # b crashes
    c.down.add("fake://b")
    held = drv.observe()
    assert held.vms == ("vm1", "vm2") and held.hosts[held.vm_host[1]] == "b"  # as b last showed it
    assert held.host_seen[1] == first.time < held.host_seen[0] == held.time
    assert held.counters.cpu_time[1] == first.counters.cpu_time[1] and held.host_cores[1] == first.host_cores[1]
    out = drv.apply(RestartVM(vm="vm2", host="a"))
    assert out.status == OK and "defined and started on a" in out.message
    restarted = c.conns["fake://a"].doms["vm2"]
    assert [call[0] for call in restarted.calls] == ["defineXML", "create"] and "<name>vm2</name>" in restarted.calls[
        0
    ][1]
    after = drv.observe()
    assert after.vms == ("vm1", "vm2") and after.hosts[after.vm_host[1]] == "a"  # running: no held copy
    again = drv.apply(RestartVM(vm="vm2", host="a"))
    assert again.status == FAILED and "vm2 runs on a; not restarted" in again.message


def test_bad_uris_and_unreachable_hosts_are_clear_errors():
    with pytest.raises(DriverError, match="not a libvirt URI"):
        LibvirtDriver({"a": "node1"}, open_conn=lambda u: None)
    with pytest.raises(DriverError, match="at least one host"):
        LibvirtDriver({}, open_conn=lambda u: None)
    c = Cluster()
    c.down.add("fake://b")
    with pytest.raises(DriverError, match=r"cannot reach host b at fake://b: .*refused"):
        make(c).connect()


def test_pci_addresses_are_parsed_or_refused_with_the_expected_form():
    assert pci_parts("0000:41:10.2") == (0, 0x41, 0x10, 2)
    with pytest.raises(ValueError, match=r"DDDD:BB:SS\.F"):
        pci_parts("41:10")


def test_guest_report_parses_net_dev_and_meminfo():
    text = """report 12 345.67 eth1
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       2    0    0    0     0          0         0      100       2    0    0    0     0       0          0
  eth0:    5000      50    0    0    0     0          0         0     7000      70    0    0    0     0       0          0
MemTotal:         100000 kB
MemAvailable:      60000 kB
pong 7
loads cpu=50"""
    r = parse_report(text.splitlines())
    assert (r.seq, r.uptime, r.active_nic) == (12, 345.67, "eth1")
    assert r.net["eth0"] == (5000, 50, 7000, 70) and r.net["lo"] == (100, 2, 100, 2)
    assert r.meminfo == {"MemTotal": 100000 * 1024, "MemAvailable": 60000 * 1024}
    assert r.answers == ["pong 7"] and r.loads == "cpu=50"


def test_hosts_file_reads_uris_and_sriov_settings(tmp_path):
    from sova.drivers.hosts_file import load_hosts_file

    f = tmp_path / "hosts.toml"
    f.write_text(
        '[hosts.node1]\nuri = "qemu+tls://node1/system"\nmigration_uri = "qemu+tls://node1/system"\n'
        '[hosts.node1.sriov]\npf = "enp65s0f0"\nvfs = ["0000:41:10.0", "0000:41:10.2"]\nbandwidth = "25Gbps"\n'
        '[hosts.node2]\nuri = "qemu+ssh://root@node2/system"\nnic_bandwidth = "1Gbps"\n'
    )
    cfg = load_hosts_file(f)
    assert cfg.hosts == {"node1": "qemu+tls://node1/system", "node2": "qemu+ssh://root@node2/system"}
    assert cfg.sriov["node1"].vfs == ["0000:41:10.0", "0000:41:10.2"] and cfg.sriov["node1"].bandwidth == 25e9
    assert cfg.nic_bandwidth["node2"] == 1e9 and cfg.migration_uri == {"node1": "qemu+tls://node1/system"}


def test_hosts_file_names_every_problem_with_its_table_and_key(tmp_path):
    from sova.drivers.hosts_file import load_hosts_file
    from sova.model.schema import InputError

    f = tmp_path / "hosts.toml"
    f.write_text(
        '[hosts.node1]\nuri = "qemu+tcp://node1/system"\n[hosts.node1.sriov]\npf = "p"\nvfs = ["41:10"]\n'
        "[hosts.node2]\n"
    )
    with pytest.raises(InputError) as e:
        load_hosts_file(f)
    text = str(e.value)
    assert "[hosts.node1].uri: qemu+tcp:// is unauthenticated" in text
    assert "[hosts.node1].sriov.vfs[0]: VF address '41:10'" in text
    assert "[hosts.node2].uri: missing" in text
    f.write_text("hosts = [")
    with pytest.raises(InputError, match="not valid TOML"):
        load_hosts_file(f)


def test_hosts_file_reads_flow_counters_and_the_topology_in_host_order(tmp_path):
    from sova.drivers.hosts_file import load_hosts_file
    from sova.model.schema import InputError

    f = tmp_path / "hosts.toml"
    f.write_text(
        "shared_storage = true\n"
        '[hosts.node1]\nuri = "qemu+tls://node1/system"\n[hosts.node1.flows]\ncommand = ["ssh", "root@node1"]\n'
        '[hosts.node2]\nuri = "qemu+tls://node2/system"\n[hosts.node2.flows]\n'
        '[hosts.node3]\nuri = "qemu+tls://node3/system"\n'
        '[topology]\nkind = "leaf-spine"\nhosts_per_leaf = 2\nleaves = 2\n'
    )
    cfg = load_hosts_file(f)
    assert cfg.shared_storage
    assert cfg.flows["node1"].run.prefix == ("ssh", "root@node1") and cfg.flows["node1"].ports == "vnet*"
    assert cfg.flows["node2"].run.prefix == () and "node3" not in cfg.flows  # an empty table: locally
    assert cfg.topology.kind == "leaf-spine" and cfg.topology.hosts_per_leaf == 2
    f.write_text(
        '[hosts.node1]\nuri = "qemu+tls://node1/system"\n[hosts.node1.flows]\nports = "vnet*\\"; drop"\n'
        '[topology]\nkind = "leaf-spine"\nhosts_per_leaf = 0\n'
    )
    with pytest.raises(InputError) as e:
        load_hosts_file(f)
    text = str(e.value)
    assert "[hosts.node1].flows.ports: 'vnet*\"; drop' is not an interface name" in text
    assert "[topology].hosts_per_leaf" in text


def test_guest_counters_do_not_jump_when_the_agent_starts_reporting(monkeypatch):
    from sova.drivers.guest_agent import GuestReport

    c = Cluster()
    c.add("fake://a", "vm1")
    drv = make(c, guest_socket=lambda host, path: path)
    drv.observe()
    c.conns["fake://a"].doms["vm1"].devices.append(
        "<channel type='unix'><source mode='bind' path='/x/org.sova.agent.0'/></channel>"
    )
    with_fake_channels(monkeypatch)
    first = drv.observe()  # the host's view: 3000 bytes sent
    drv.hosts.vms["vm1"].channel.latest = GuestReport(1, 1.0, "eth0", {"eth0": (9e6, 9e3, 5e6, 5e3)}, {}, "")
    second = drv.observe()  # the agent's view starts at 5 MB sent since boot
    drv.hosts.vms["vm1"].channel.latest = GuestReport(2, 2.0, "eth0", {"eth0": (9e6, 9e3, 5e6 + 700, 5e3)}, {}, "")
    third = drv.observe()
    assert second.counters.guest_tx_bytes[0] == first.counters.guest_tx_bytes[0]
    assert third.counters.guest_tx_bytes[0] - second.counters.guest_tx_bytes[0] == 700


def test_a_guest_back_on_its_host_as_a_new_qemu_is_read_on_its_new_socket(monkeypatch):
    """Moved away and back between two observations, a VM is on the same host but in a new QEMU with a
    socket of its own: the channel follows the socket, not only the host (the old one is closed)."""
    closed = with_fake_channels(monkeypatch)
    c = Cluster()
    dom = c.add("fake://a", "vm1")
    dom.devices.append("<channel type='unix'><source mode='bind' path='/d-1-vm1/org.sova.agent.0'/></channel>")
    drv = make(c, guest_socket=lambda host, path: path)
    drv.observe()
    assert drv.hosts.vms["vm1"].channel.path == "/d-1-vm1/org.sova.agent.0"
    drv.hosts.vms["vm1"].channel.answers.append("pong a")  # heard from the guest before it moved
    dom.devices[-1] = "<channel type='unix'><source mode='bind' path='/d-7-vm1/org.sova.agent.0'/></channel>"
    drv.observe()
    assert drv.hosts.vms["vm1"].channel.path == "/d-7-vm1/org.sova.agent.0"
    assert closed == ["/d-1-vm1/org.sova.agent.0"] and drv.guest_answers("vm1") == ["pong a"]


def test_stats_a_busy_domain_leaves_out_keep_their_last_value():
    c = Cluster()
    d = c.add("fake://a", "vm1")
    drv = make(c)
    first = drv.observe()
    full = dict(d.stats)
    d.stats = {"state.state": 1}  # NOWAIT during a migration job: only what is at hand
    second = drv.observe()
    d.stats = {**full, "cpu.time": full["cpu.time"] + 10**9}
    third = drv.observe()
    assert second.counters.cpu_time[0] == first.counters.cpu_time[0] and second.vm_memory[0] == 128
    assert third.counters.cpu_time[0] - second.counters.cpu_time[0] == pytest.approx(1.0)


def test_dom0_weight_on_xen_is_domain_0s_credit_weight_and_domain_0_is_no_guest():
    c = Cluster()
    c.conns["fake://a"].kind = "Xen"
    guest = c.add("fake://a", "vm1")
    guest.sched = {"weight": 512, "cap": 0}  # Xen's credit scheduler parameters
    c.add("fake://a", "Domain-0")  # libxl lists the control domain among the domains
    drv = make(c)
    snap = drv.observe()
    assert snap.vms == ("vm1",) and snap.dom0_weight[0] == 256 and snap.vm_weight[0] == 512
    outcome = drv.apply(SetDom0Weight(host="a", weight=768))
    assert outcome.status == OK and "Domain-0 credit weight set to 768" in outcome.message
    assert c.conns["fake://a"].dom0.calls[-1] == ("sched", {"weight": 768})
    assert not any(call[0] == "sched" for call in guest.calls)  # the guests are not touched on Xen
    assert drv.observe().dom0_weight[0] == 768


def test_dom0_weight_on_kvm_adjusts_only_capped_io_threads_and_is_not_reported():
    c = Cluster()
    capped, free = c.add("fake://a", "vm1"), c.add("fake://a", "vm2")
    capped.sched.update({"emulator_period": 100000, "emulator_quota": 50000})
    other = c.add("fake://b", "vm3")
    other.sched.update({"emulator_period": 100000, "emulator_quota": 50000})
    drv = make(c)
    assert np.isnan(drv.observe().dom0_weight).all()  # KVM has no Dom0: the model uses Eq. 1
    outcome = drv.apply(SetDom0Weight(host="a", weight=512))
    assert outcome.status == OK
    assert "1 capped guest(s) set to 2 core(s) each; 1 guest(s) unlimited already" in outcome.message
    quota = {"emulator_period": 100000, "emulator_quota": 200000, "iothread_period": 100000, "iothread_quota": 200000}
    assert capped.calls[-1] == ("sched", quota)
    assert not any(call[0] == "sched" for call in free.calls + other.calls)  # no cap added, no other host


def test_dom0_weight_for_a_host_sova_does_not_manage_fails_and_changes_nothing():
    c = Cluster()
    d = c.add("fake://a", "vm1")
    drv = make(c)
    drv.observe()
    outcome = drv.apply(SetDom0Weight(host="nowhere", weight=512))
    assert outcome.status == FAILED and "nowhere" in outcome.message
    assert not any(call[0] == "sched" for call in d.calls)


CGROUP_V2_UNLIMITED = 17_592_186_044_415  # how libvirt reads cpu.max "max" on cgroup v2


def test_a_guest_without_a_cap_on_cgroup_v2_reports_no_cap():
    c = Cluster()
    d = c.add("fake://a", "vm1")
    d.sched.update({"vcpu_quota": CGROUP_V2_UNLIMITED})
    assert make(c).observe().vm_cap[0] == 0


def test_dom0_weight_on_kvm_adds_no_cap_to_io_threads_that_cgroup_v2_reads_as_unlimited():
    c = Cluster()
    d = c.add("fake://a", "vm1")
    d.sched.update({"emulator_period": 100000, "emulator_quota": CGROUP_V2_UNLIMITED})
    drv = make(c)
    drv.observe()
    outcome = drv.apply(SetDom0Weight(host="a", weight=512))
    assert outcome.status == OK and "0 capped guest(s)" in outcome.message and "1 guest(s) unlimited" in outcome.message
    assert not any(call[0] == "sched" for call in d.calls)


def test_a_vms_disk_counts_as_local_when_every_disk_is_a_file_or_block_device_of_its_host():
    c = Cluster()
    c.add("fake://a", "local")
    c.add("fake://a", "iscsi").disk_type = "network"
    snap = make(c).observe()
    local = dict(zip(snap.vms, snap.vm_disk_local.tolist(), strict=True))
    assert local == {"local": True, "iscsi": False}


def test_io_sample_sums_each_vms_disks_and_a_vm_not_running_reads_as_unknown():
    c = Cluster()
    c.add("fake://a", "vm1", **{"block.count": 2, "block.1.rd.reqs": 5, "block.1.rd.bytes": 100, "block.1.rd.times": 0})
    drv = make(c)
    drv.observe()
    sample = drv.io_sample(["vm1", "gone"])
    assert sample.requests[0] == 7 + 3 + 5 and sample.bytes[0] == 4096 + 512 + 100
    assert sample.busy[0] == pytest.approx(3e-3)
    assert np.isnan(sample.requests[1]) and np.isnan(sample.busy[1])


def test_io_throttles_are_written_rounded_only_when_they_change_and_a_vanished_vm_is_skipped():
    c = Cluster()
    d = c.add("fake://a", "vm1")
    c.add("fake://b", "vm2")
    drv = make(c)
    drv.observe()
    del c.conns["fake://b"].doms["vm2"]
    throttle = IoThrottle(("vm1", "vm2"), np.array([199.6, 300.0]), np.zeros(2))
    drv.set_io_throttle(throttle)
    drv.set_io_throttle(throttle)  # unchanged: nothing written again
    assert [call for call in d.calls if call[0] == "iotune"] == [("iotune", "vda", {"total_iops_sec": 200})]


def test_scheduler_tags_and_in_flight_caps_are_not_applied_on_libvirt_said_once_and_limits_still_are(caplog):
    c = Cluster()
    d = c.add("fake://a", "vm1")
    drv = make(c)
    drv.observe()
    tagged = IoThrottle(
        ("vm1",),
        np.array([150.0]),
        np.zeros(1),
        reservation=np.array([100.0]),
        weight=np.ones(1),
        in_flight=np.array([8.0]),
    )
    with caplog.at_level("WARNING"):
        drv.set_io_throttle(tagged)
        drv.set_io_throttle(tagged)
    assert [r.message for r in caplog.records].count(
        "libvirt has no reservation or weight scheduler shared by several VMs' disks (mClock, DRR): "
        "only their IO rate limits are applied"
    ) == 1
    assert [r.message for r in caplog.records].count(
        "libvirt cannot cap a running disk's requests in flight: latency controls are not applied"
    ) == 1
    assert [call for call in d.calls if call[0] == "iotune"] == [("iotune", "vda", {"total_iops_sec": 150})]
