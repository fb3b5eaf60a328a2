"""What a VM wanted to send and receive on a libvirt host (CloudScope's demand): the agent's send-queue
samples, the estimator over observation intervals, and the driver's counters on a fake connection."""

from __future__ import annotations

import numpy as np
import pytest

from fake_libvirt import Cluster, make, with_fake_channels
from sova.drivers.demand import ReceiveDemand, SendDemand, outbound_limit, path_alone, wanted_bytes
from sova.drivers.guest_agent import GuestReport, SendQueues, parse_report, parse_sendq

MBIT = 1e6


def test_a_report_carries_the_agents_send_queue_counts_and_an_agent_without_them_reports_none():
    lines = ["report 3 10.5 eth0", "  eth0: 5 1 0 0 0 0 0 0 7 1 0 0 0 0 0 0", "sendq 15 12 524288", "loads "]
    assert parse_report(lines).sendq == SendQueues(15, 12, 524288)
    assert parse_report([line for line in lines if not line.startswith("sendq")]).sendq is None
    assert parse_sendq("sendq 5 6 0") is None  # more held samples than samples
    assert parse_sendq("sendq 5 x 0") is None and parse_sendq("sendq 5 1") is None


def test_wanted_is_what_was_carried_unless_the_path_over_the_held_part_is_more():
    assert wanted_bytes(1000.0, 0.0, 100 * MBIT, 2.0) == 1000.0
    assert wanted_bytes(1000.0, 1.0, 100 * MBIT, 2.0) == pytest.approx(25e6)  # 100 Mbit/s for 2 s
    assert wanted_bytes(1000.0, 0.5, 100 * MBIT, 2.0) == pytest.approx(12.5e6)  # held half of it
    assert wanted_bytes(30e6, 1.0, 100 * MBIT, 2.0) == 30e6  # never below what it carried


def test_the_path_alone_is_the_vms_own_limit_or_vf_tier_at_most_the_port():
    xml = (
        "<interface type='bridge'><mac address='52:54:00:00:00:01'/>"
        "<bandwidth><inbound average='500'/><outbound average='2441'/></bandwidth></interface>"
        "<interface type='bridge'><mac address='52:54:00:aa:00:01'/>"
        "<bandwidth><outbound average='100'/></bandwidth></interface>"
    )
    assert outbound_limit(xml, {"52:54:00:aa:00:01"}) == 2441 * 1024 * 8  # the emulated VF's own left out
    assert outbound_limit(xml, set()) == 100 * 1024 * 8
    assert outbound_limit("<interface type='bridge'><mac address='x'/></interface>", set()) == 0.0
    assert path_alone(100 * MBIT, 20 * MBIT, 0.0, on_vf=False) == 20 * MBIT
    assert path_alone(100 * MBIT, 0.0, 0.0, on_vf=False) == 100 * MBIT
    assert path_alone(100 * MBIT, 20 * MBIT, 30 * MBIT, on_vf=True) == 30 * MBIT  # the VF bypasses the vNIC
    assert path_alone(10 * MBIT, 20 * MBIT, 0.0, on_vf=False) == 10 * MBIT


def test_a_sender_held_back_in_every_sample_wants_its_path_and_one_never_held_wants_what_it_carried():
    held, free = SendDemand(), SendDemand()
    assert held.update(0.0, 1e6, SendQueues(10, 0, 0), 100 * MBIT) == 1e6  # the first reading sets the base
    assert free.update(0.0, 1e6, SendQueues(10, 0, 0), 100 * MBIT) == 1e6
    # 2 s later: 10 MB carried by each, the first held back in all 10 new samples, the second in none
    assert held.update(2.0, 11e6, SendQueues(20, 10, 600_000), 100 * MBIT) == pytest.approx(1e6 + 25e6)
    assert held.last_moved == 10e6 and held.last_extra == pytest.approx(15e6)
    assert free.update(2.0, 11e6, SendQueues(20, 0, 0), 100 * MBIT) == pytest.approx(11e6)


def test_a_duty_cycle_held_half_the_samples_wants_half_the_path():
    d = SendDemand()
    d.update(0.0, 0.0, SendQueues(0, 0, 0), 20 * MBIT)
    assert d.update(10.0, 12.5e6, SendQueues(10, 5, 0), 20 * MBIT) == pytest.approx(12.5e6)  # on 5 s at its limit


def test_no_agent_a_missing_report_or_the_same_report_again_count_what_was_carried():
    d = SendDemand()
    d.update(0.0, 0.0, None, 100 * MBIT)
    assert d.update(1.0, 5e5, None, 100 * MBIT) == 5e5  # no agent
    assert d.update(2.0, 1e6, SendQueues(8, 8, 0), 100 * MBIT) == 1e6  # its first counts cover its life
    assert d.update(3.0, 2e6, SendQueues(8, 8, 0), 100 * MBIT) == 2e6  # no new sample since
    assert d.update(4.0, 3e6, SendQueues(13, 13, 0), 100 * MBIT) == pytest.approx(2e6 + 12.5e6)


def test_a_restarted_agent_counts_from_zero_and_wanted_never_falls_below_carried():
    d = SendDemand()
    d.update(0.0, 0.0, SendQueues(100, 50, 0), 100 * MBIT)
    got = d.update(1.0, 1e6, SendQueues(5, 5, 0), 100 * MBIT)  # restarted: 5 samples, all held
    assert got == pytest.approx(12.5e6)
    wanted, carried = [got], [1e6]
    for t in range(2, 8):
        carried.append(carried[-1] + 1e6 * t)
        wanted.append(d.update(float(t), carried[-1], SendQueues(5 + 5 * t, 5, 0), 100 * MBIT))
    assert all(np.diff(wanted) >= np.diff(carried) - 1e-6) and all(w >= c for w, c in zip(wanted, carried, strict=True))


def test_a_receiver_wants_what_its_held_back_senders_wanted_beyond_carried_in_proportion_to_what_they_sent_it():
    r = ReceiveDemand()
    vms = ("a", "b", "c")
    flows0 = (np.array([0, 0]), np.array([1, 2]), np.array([0.0, 0.0]))
    first = r.update(vms, np.array([0.0, 100.0, 200.0]), np.zeros(3), np.zeros(3), flows0)
    assert list(first) == [0.0, 100.0, 200.0]
    # a sent 10 MB (3 to b, 1 to c, 6 elsewhere) and wanted 20 MB more; b and c received 3 and 1 MB
    flows1 = (np.array([0, 0]), np.array([1, 2]), np.array([3e6, 1e6]))
    got = r.update(vms, np.array([0.0, 100 + 3e6, 200 + 1e6]), np.array([10e6, 0, 0]), np.array([20e6, 0, 0]), flows1)
    assert got[0] == 0.0
    assert got[1] == pytest.approx(100 + 3e6 + 6e6) and got[2] == pytest.approx(200 + 1e6 + 2e6)
    # without a held-back sender, what each carried
    flows2 = (np.array([0, 0]), np.array([1, 2]), np.array([4e6, 1e6]))
    again = r.update(vms, np.array([0.0, 100 + 4e6, 200 + 1e6]), np.array([1e6, 0, 0]), np.zeros(3), flows2)
    assert again[1] - got[1] == pytest.approx(1e6) and again[2] == got[2]


def _with_agent(monkeypatch, drv):
    """Give the driver's VMs a stand-in agent channel whose report the test sets."""
    with_fake_channels(monkeypatch)
    return drv


def _report(seq: int, tx: float, rx: float, sendq: SendQueues | None) -> GuestReport:
    return GuestReport(seq, float(seq), "eth0", {"eth0": (rx, 0, tx, 0)}, {}, "", sendq=sendq)


def test_on_a_fake_host_a_held_back_vm_wants_its_vnic_limit_then_its_port_and_an_agentless_one_what_it_carried(
    monkeypatch,
):
    c = Cluster()
    for uri, name in (("fake://a", "vm1"), ("fake://a", "vm2"), ("fake://b", "vm3")):
        dom = c.add(uri, name)
        if name != "vm3":  # vm3 has no agent: the host's view
            dom.devices.append(
                f"<channel type='unix'><source mode='bind' path='/x/{name}/org.sova.agent.0'/></channel>"
            )
    c.conns["fake://a"].doms["vm1"].outbound = 2441  # KiB/s: 20 Mbit/s
    drv = _with_agent(monkeypatch, make(c, guest_socket=lambda host, path: path, nic_bandwidth=100 * MBIT))
    clock = [0.0]
    drv.now = lambda: clock[0]
    drv.observe()  # opens the channels
    vms = drv.hosts.vms
    vms["vm1"].channel.latest = _report(1, 0.0, 0.0, SendQueues(5, 0, 0))
    vms["vm2"].channel.latest = _report(1, 0.0, 0.0, SendQueues(5, 0, 0))
    before = drv.observe()
    clock[0] = 10.0
    vms["vm1"].channel.latest = _report(2, 24e6, 0.0, SendQueues(55, 50, 500_000))  # held all along
    vms["vm2"].channel.latest = _report(2, 5e6, 0.0, SendQueues(55, 0, 0))  # paced: never held
    after = drv.observe()
    rate = (after.counters.guest_tx_wanted - before.counters.guest_tx_wanted) * 8 / 10
    carried = (after.counters.guest_tx_bytes - before.counters.guest_tx_bytes) * 8 / 10
    assert rate[0] == pytest.approx(2441 * 1024 * 8)  # its own limit: what it carried, near enough
    assert rate[1] == pytest.approx(carried[1]) == pytest.approx(4 * MBIT)
    assert rate[2] == carried[2]  # no agent
    assert (after.counters.guest_rx_wanted == after.counters.guest_rx_bytes).all()  # no traffic matrix
    # the limit lifted: held back as before, it now wants the port
    c.conns["fake://a"].doms["vm1"].outbound = 0
    clock[0] = 20.0
    vms["vm1"].channel.latest = _report(3, 80e6, 0.0, SendQueues(105, 100, 500_000))
    later = drv.observe()
    assert (later.counters.guest_tx_wanted[0] - after.counters.guest_tx_wanted[0]) * 8 / 10 == pytest.approx(100 * MBIT)


def test_on_a_fake_host_a_migrated_vm_keeps_its_wanted_counters_growing_from_where_they_were(monkeypatch):
    c = Cluster()
    dom = c.add("fake://a", "vm1")
    dom.devices.append("<channel type='unix'><source mode='bind' path='/x/org.sova.agent.0'/></channel>")
    drv = _with_agent(monkeypatch, make(c, guest_socket=lambda host, path: path, nic_bandwidth=100 * MBIT))
    clock = [0.0]
    drv.now = lambda: clock[0]
    drv.observe()
    drv.hosts.vms["vm1"].channel.latest = _report(1, 1e6, 0.0, SendQueues(5, 5, 0))
    first = drv.observe()
    clock[0] = 2.0
    drv.hosts.vms["vm1"].channel.latest = _report(2, 2e6, 0.0, SendQueues(10, 10, 0))
    second = drv.observe()
    c.conns["fake://b"].doms["vm1"] = c.conns["fake://a"].doms.pop("vm1")  # it moved to b
    clock[0] = 4.0
    third = drv.observe()  # b's channel is new: no report yet, so wanted is what it carried (nothing)
    clock[0] = 6.0
    drv.hosts.vms["vm1"].channel.latest = _report(3, 3e6, 0.0, SendQueues(20, 20, 0))
    fourth = drv.observe()
    wanted = [s.counters.guest_tx_wanted[0] for s in (first, second, third, fourth)]
    assert third.vm_host[0] == 1
    assert wanted[1] - wanted[0] == pytest.approx(2 * 100 * MBIT / 8)
    assert wanted[2] == wanted[1]
    assert wanted[3] - wanted[2] == pytest.approx(2 * 100 * MBIT / 8)
    assert all(s.counters.guest_tx_wanted[0] >= s.counters.guest_tx_bytes[0] for s in (first, second, third, fourth))


def test_on_a_fake_host_a_receiver_wants_what_a_held_back_sender_wanted_to_send_it(monkeypatch):
    c = Cluster()
    for uri, name, mac in (("fake://a", "vm1", "52:54:00:00:00:01"), ("fake://b", "vm2", "52:54:00:00:00:02")):
        dom = c.add(uri, name)
        dom.mac = mac
        dom.devices.append(f"<channel type='unix'><source mode='bind' path='/x/{name}/org.sova.agent.0'/></channel>")

    class Flows:
        bytes = 0.0

        def totals(self):
            return {("52:54:00:00:00:01", "52:54:00:00:00:02"): self.bytes}

    flows = Flows()
    drv = _with_agent(monkeypatch, make(c, guest_socket=lambda host, path: path, nic_bandwidth=100 * MBIT, flows=flows))
    clock = [0.0]
    drv.now = lambda: clock[0]
    drv.observe()
    vms = drv.hosts.vms
    vms["vm1"].channel.latest = _report(1, 0.0, 0.0, SendQueues(5, 0, 0))
    vms["vm2"].channel.latest = _report(1, 0.0, 0.0, SendQueues(5, 0, 0))
    before = drv.observe()
    clock[0] = 10.0
    flows.bytes = 50e6
    vms["vm1"].channel.latest = _report(2, 50e6, 0.0, SendQueues(55, 50, 0))  # 40 Mbit/s of the port's 100
    vms["vm2"].channel.latest = _report(2, 0.0, 50e6, SendQueues(55, 0, 0))
    after = drv.observe()
    tx = (after.counters.guest_tx_wanted - before.counters.guest_tx_wanted) * 8 / 10
    rx = (after.counters.guest_rx_wanted - before.counters.guest_rx_wanted) * 8 / 10
    assert tx[0] == pytest.approx(100 * MBIT) and rx[1] == pytest.approx(100 * MBIT)
    assert rx[0] == 0.0 and tx[1] == 0.0
