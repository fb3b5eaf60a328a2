"""CloudScope's V-slowdown model against values computed by hand from the paper's equations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import make_scenario
from sova.analyze.loading_vectors import host_load, vm_terms, window_usage
from sova.analyze.vslowdown import (
    GRANT_TABLE_BYTES,
    HostLoad,
    VmLoad,
    dom0_weight_needed,
    gammas,
    grant_table,
    oversubscription,
    p_disk,
    p_dom0,
    v_slowdown,
    with_vm,
)
from sova.drivers.sim import SimDriver
from sova.model.knowledge import Knowledge
from sova.sim.engine import Simulator

KB = 1024


def load(**changes) -> HostLoad:
    """One host, idle and unsaturated unless changed: 32 cores, a 10 Gb/s port, Dom0 weighing as a guest."""
    base = dict(
        dom0_util=0.0,
        dom0_weight=256.0,
        guest_weight_mean=256.0,
        cpu_capacity=32.0,
        cpu_demand=0.0,
        disk_bs=0.0,
        net_tx_bs=0.0,
        net_rx_bs=0.0,
        disk_queue=0.0,
        nic_capacity=10e9,
        net_tx_demand=0.0,
        net_rx_demand=0.0,
    )
    base.update(changes)
    return HostLoad(**{k: np.atleast_1d(np.asarray(v, dtype=float)) for k, v in base.items()})


def vm_load(**changes) -> VmLoad:
    """A VM of weight 512 that adds nothing to its host's load unless changed."""
    base = dict(disk_bs=0, net_tx_bs=0, net_rx_bs=0, disk_queue=0, net_tx_demand=0, net_rx_demand=0, dom0_util=0.0)
    return VmLoad(**{"cpu_demand": 0.0, "weight": 512, **base, **changes})


def test_an_idle_host_slows_nothing_down():
    assert gammas(load()).tolist() == [[1.0, 1.0, 1.0]]


def test_dom0_at_half_load_leaves_its_state_half_the_time_eq1():
    assert p_dom0(load(dom0_util=0.5)).tolist() == [0.5]
    assert gammas(load(dom0_util=0.5))[0, 0] == pytest.approx((2 + 1) / 2)  # E = 1/0.5 + 1/1, E' = 2


def test_dom0_weight_scales_its_chance_and_is_capped_at_one_eq8():
    assert p_dom0(load(dom0_util=0.6, dom0_weight=512.0)).tolist() == [pytest.approx(0.8)]  # 0.4 x 512 / 256
    assert p_dom0(load(dom0_util=0.6, dom0_weight=1024.0)).tolist() == [1.0]  # 1.6 is no probability


def test_oversubscribed_cpus_are_reached_with_capacity_over_demand_eq2():
    # 45 VMs of 4 vCPUs at 50 % on 32 threads: Σ util·vCPU = 90 cores
    assert oversubscription(np.array([32.0]), np.array([90.0])).tolist() == [pytest.approx(32 / 90)]
    assert gammas(load(cpu_demand=90.0))[0, 0] == pytest.approx((1 + 90 / 32) / 2)
    assert oversubscription(np.array([32.0]), np.array([31.9])).tolist() == [1.0]


@pytest.mark.parametrize(
    ("total_kb", "expected"),
    [(256, 1.0), (511, 1.0), (512, 1 / 2), (768, 1 / 2), (1024, 1 / 3), (10 * 256, 1 / 6)],
)
def test_the_grant_table_holds_512_kb_and_delays_what_does_not_fit_eq3(total_kb, expected):
    assert GRANT_TABLE_BYTES == 512 * KB
    assert grant_table(np.array([total_kb * KB]), np.array([1.0])).tolist() == [pytest.approx(expected)]
    assert grant_table(np.array([total_kb * KB]), np.array([0.5])).tolist() == [
        pytest.approx(expected * 0.5 if total_kb >= 512 else 1.0)
    ]


@pytest.mark.parametrize(("rho", "expected"), [(0.0, 1.0), (0.4, 1.0), (0.5, 1.0), (0.8, 0.25), (0.9, 1 / 9)])
def test_a_disk_queue_of_one_request_or_more_delays_its_jobs_eq4(rho, expected):
    # Eq. 4 in the utilisation ρ, read from the queue the host counts, Q = ρ / (1 - ρ): (1 - ρ) / ρ = 1 / Q
    assert p_disk(np.array([rho / (1 - rho)])).tolist() == [pytest.approx(expected)]


def test_the_disk_chain_adds_dom0_grant_table_and_disk_delays():
    # three VMs reading 256 KB blocks (k = 1: p' = 1/2) with 4 requests queued on the disk (ρ = 0.8,
    # p_disk = 1/4): E = 1 + 2 + 4
    gamma = gammas(load(disk_bs=3 * 256 * KB, disk_queue=4.0))
    assert gamma[0].tolist() == pytest.approx([1.0, 7 / 3, 1.0])


def test_an_oversubscribed_nic_and_the_busier_direction_set_the_network_chain_eq5():
    gamma = gammas(load(net_tx_demand=15e9, net_rx_demand=2e9, net_tx_bs=9 * 1448, net_rx_bs=9 * 1448))
    assert gamma[0, 2] == pytest.approx((1 + 1 + 1.5) / 3)  # p_net = 10/15


def test_a_vms_slowdown_weighs_each_resources_slowdown_by_its_loading_vector_eq7():
    gamma = np.array([[1.5, 7 / 3, 3.5 / 3]])
    beta = np.array([[0.5, 0.3, 0.2]])
    assert v_slowdown(gamma, beta, np.array([0])).tolist() == [pytest.approx(0.75 + 0.7 + 0.7 / 3)]


def test_adding_a_vm_adds_its_terms_to_every_hosts_sums():
    hosts = load(cpu_demand=[10.0, 40.0], cpu_capacity=[32.0, 32.0], dom0_util=[0.1, 0.2])
    vm = vm_load(cpu_demand=4.0, dom0_util=0.05)
    after = with_vm(hosts, vm, guests=np.array([3, 1]))
    assert after.cpu_demand.tolist() == [14.0, 44.0]
    assert after.dom0_util.tolist() == pytest.approx([0.15, 0.25])
    assert after.guest_weight_mean.tolist() == pytest.approx([(3 * 256 + 512) / 4, (256 + 512) / 2])


def test_an_empty_host_the_vm_is_not_added_to_keeps_its_weights_without_nan():
    hosts = load(cpu_demand=[0.0, 8.0], cpu_capacity=[32.0, 32.0], guest_weight_mean=[256.0, 256.0])
    vm = vm_load(cpu_demand=1.0)
    after = with_vm(hosts, vm, guests=np.array([0, 2]), on=np.array([0.0, 1.0]))
    assert after.guest_weight_mean.tolist() == pytest.approx([256.0, (2 * 256 + 512) / 3])


@settings(max_examples=200, deadline=None)
@given(
    dom0=st.floats(0, 1),
    demand=st.floats(0, 500),
    disk_kb=st.floats(0, 1e5),
    queue=st.floats(0, 100),
    net=st.floats(0, 1e11),
    beta=st.lists(st.floats(0, 1), min_size=3, max_size=3).filter(lambda b: sum(b) > 0),
)
def test_nothing_runs_faster_for_company_and_more_load_never_helps(dom0, demand, disk_kb, queue, net, beta):
    base = load(dom0_util=dom0, cpu_demand=demand, disk_bs=disk_kb * KB, disk_queue=queue, net_tx_demand=net)
    busier = load(
        dom0_util=min(dom0 + 0.1, 1.0),
        cpu_demand=demand + 8,
        disk_bs=(disk_kb + 256) * KB,
        disk_queue=queue + 0.5,
        net_tx_demand=net + 1e9,
    )
    b = np.array([beta]) / sum(beta)
    now, then = v_slowdown(gammas(base), b, np.array([0]))[0], v_slowdown(gammas(busier), b, np.array([0]))[0]
    assert np.isfinite(now) and now >= 1.0 - 1e-12
    assert then >= now - 1e-9


def test_the_dom0_weight_needed_solves_eq7_for_p_dom0_then_eq8_for_the_weight():
    # a network VM (β = 0, 0, 1) on a host whose Dom0 is 60 % busy, NIC fine: δ = (1/p + 1 + 1) / 3
    host = load(dom0_util=0.6)
    beta = np.array([[0.0, 0.0, 1.0]])
    assert v_slowdown(gammas(host), beta, np.array([0]))[0] == pytest.approx((2.5 + 2) / 3)  # 1.5 now
    # within 1.2: 1/p <= 3 x 1.2 - 2 = 1.6, p >= 0.625; Eq. 8: 0.625 = 0.4 x w / 256, w = 400
    weight = dom0_weight_needed(host, beta, np.array([0]), 1.2)
    assert weight.tolist() == [pytest.approx(400.0)]
    raised = load(dom0_util=0.6, dom0_weight=400.0)
    assert v_slowdown(gammas(raised), beta, np.array([0]))[0] == pytest.approx(1.2)


def test_an_slo_no_dom0_weight_can_meet_asks_for_none():
    host = load(dom0_util=0.5, net_tx_demand=20e9)  # the NIC itself is oversubscribed twice
    weight = dom0_weight_needed(host, np.array([[0.0, 0.0, 1.0]]), np.array([0]), 1.1)
    assert np.isnan(weight).all()  # even p_Dom0 = 1 leaves (1 + 1 + 2) / 3 > 1.1: the NIC is the cause


def test_an_unknown_or_unusable_dom0_weight_leaves_eq1():
    for dom0_weight, guests in ((np.nan, 256.0), (256.0, 0.0), (0.0, 256.0)):
        assert p_dom0(load(dom0_util=0.25, dom0_weight=dom0_weight, guest_weight_mean=guests)).tolist() == [0.75]


def _observed(scenario: dict, steps: int = 5, window: float = 10.0):
    """The window's usage of a simulated run, as the analyzers read it from the sim driver."""
    sim = Simulator(make_scenario(**scenario))
    knowledge = Knowledge(30.0)
    for _ in range(steps):
        sim.step()
        knowledge.add(SimDriver(sim).observe())
    return window_usage(knowledge, window)


def test_the_disk_channel_is_the_queue_of_requests_the_vms_keep_outstanding():
    """Eq. 4's ρ/(1 - ρ) is the disk's queue: the time the VMs' requests spend outstanding per second
    (Little's law over libvirt's rd/wr_total_times), wherever the disk is; not the NIC's bytes."""
    one = {"kind": "fio", "iops": 1e7, "size": 65536, "read": 1.0, "iodepth": 1, "pattern": "sequential"}
    usage = _observed(
        {
            "storage": [{"name": "disk"}],
            "vms": [{"name": "a", "host": "h1"}, {"name": "b", "host": "h1"}],
            "workloads": [{**one, "vm": "a"}, {**one, "vm": "b"}],
        }
    )
    terms = vm_terms(usage)
    assert terms["disk_queue"].tolist() == pytest.approx([1.0, 1.0], rel=0.02)  # each always has one out
    assert host_load(usage, terms).disk_queue[0] == pytest.approx(2.0, rel=0.02)


def test_eq5_reads_the_traffic_vms_wanted_not_what_the_port_let_through():
    """Carried traffic never exceeds the port; the bytes the flows would have moved alone do (the
    simulator's counters of demand)."""
    usage = _observed(
        {
            "hosts": [{"name": "h1", "cores": 32}, {"name": "h2", "cores": 32, "nic": {"bandwidth": "100Gbps"}}],
            "vms": [{"name": f"s{i}", "host": "h1"} for i in range(3)]
            + [{"name": f"c{i}", "host": "h2"} for i in range(3)],
            "workloads": [{"kind": "netperf", "vm": f"s{i}", "peer": f"c{i}", "direction": "rx"} for i in range(3)],
        }
    )
    load_now = host_load(usage)
    carried = usage.rx_bytes[:3].sum() * 8
    assert carried <= load_now.nic_capacity[0]
    assert load_now.net_rx_demand[0] > 1.3 * carried  # three flows that alone would each move more than a third
