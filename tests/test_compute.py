"""Proportional-share CPU: weights honoured, caps respected, work conserving."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import make_scenario
from sova.sim.compute import weighted_share
from sova.sim.engine import Simulator


def test_weights_split_a_contended_host():
    alloc = weighted_share(np.array([0, 0]), np.array([8.0, 8.0]), np.array([256.0, 512.0]), np.array([6.0]))
    assert alloc == pytest.approx([2.0, 4.0])


def test_small_demands_are_met_and_the_rest_is_shared():
    alloc = weighted_share(np.array([0, 0, 0]), np.array([1.0, 3.0, 3.0]), np.ones(3), np.array([5.0]))
    assert alloc == pytest.approx([1.0, 2.0, 2.0])


def test_hosts_are_independent():
    alloc = weighted_share(np.array([0, 1, 0, 1]), np.array([4.0, 1.0, 4.0, 1.0]), np.ones(4), np.array([4.0, 8.0]))
    assert alloc == pytest.approx([2.0, 1.0, 2.0, 1.0])


@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.floats(0, 8), st.sampled_from([128.0, 256.0, 512.0])), min_size=1, max_size=12
    ),
    st.lists(st.floats(1, 16), min_size=3, max_size=3),
)
def test_share_is_bounded_and_work_conserving(entities, caps):
    group = np.array([e[0] for e in entities])
    demand = np.array([e[1] for e in entities])
    weight = np.array([e[2] for e in entities])
    cap = np.array(caps)
    alloc = weighted_share(group, demand, weight, cap)
    assert (alloc <= demand + 1e-9).all()
    used = np.bincount(group, weights=alloc, minlength=3)
    wanted = np.bincount(group, weights=demand, minlength=3)
    assert (used <= cap + 1e-9).all()
    assert used == pytest.approx(np.minimum(wanted, cap), rel=1e-9, abs=1e-9)
    # among unsatisfied entities of a host, allocation is proportional to weight
    for h in range(3):
        short = (group == h) & (alloc < demand - 1e-9)
        if short.sum() >= 2:
            per_weight = alloc[short] / weight[short]
            assert per_weight == pytest.approx(np.full(short.sum(), per_weight[0]), rel=1e-6)


def waits(compute, vm_host: np.ndarray, vm_dem: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The wake-up waits (per VM, per host) on two hosts whose Dom0s are idle."""
    return compute.wake_waits(vm_host, compute.runnable(vm_host, vm_dem), np.zeros(2))


def test_a_waking_vcpu_waits_once_the_others_fill_the_threads_and_more_past_them():
    # two 2-thread hosts; on h0 a 1-vCPU web VM beside 1, then 3 busy 1-vCPU VMs; Dom0 idle
    scenario = make_scenario(
        hosts=[{"name": "h0", "cores": 2}, {"name": "h1", "cores": 2}],
        vms=[{"name": "web", "host": "h0", "vcpus": 1}]
        + [{"name": f"b{i}", "host": "h0", "vcpus": 1} for i in range(3)],
        simulator={"wake_wait": 0.3e-3, "wake_wait_over": 1.2e-3},
    )
    compute = Simulator(scenario).compute
    on_h0 = np.zeros(4, dtype=np.int64)
    half = waits(compute, on_h0, np.array([0.1, 1.0, 0.0, 0.0]))[0][0]
    full = waits(compute, on_h0, np.array([0.1, 1.0, 1.0, 0.0]))[0][0]
    over = waits(compute, on_h0, np.array([0.1, 1.0, 1.0, 1.0]))[0][0]
    # x = 0.5: both threads busy a quarter of the time; x = 1: always; x = 1.5: half a vCPU per thread past
    assert (half, full, over) == pytest.approx((0.3e-3 * 0.25, 0.3e-3, 0.3e-3 + 1.2e-3 * 0.5))
    alone = waits(compute, np.array([1, 0, 0, 0]), np.array([0.1, 1.0, 1.0, 1.0]))[0][0]
    assert alone == 0.0  # on a host of its own nothing is in its way


def test_dom0_forwarding_thread_waits_once_the_guests_fill_the_threads_and_more_past_them():
    # a packet wakes Dom0's forwarding thread (netback / vhost) as a request wakes an idle guest: every guest
    # counts, Dom0 itself does not
    scenario = make_scenario(
        hosts=[{"name": "h0", "cores": 2}, {"name": "h1", "cores": 2}],
        vms=[{"name": f"b{i}", "host": "h0", "vcpus": 1} for i in range(3)],
        simulator={"wake_wait": 0.3e-3, "wake_wait_over": 1.2e-3},
    )
    compute = Simulator(scenario).compute
    on_h0 = np.zeros(3, dtype=np.int64)
    half = waits(compute, on_h0, np.array([1.0, 0.0, 0.0]))[1]
    full = waits(compute, on_h0, np.array([1.0, 1.0, 0.0]))[1]
    over = waits(compute, on_h0, np.array([1.0, 1.0, 1.0]))[1]
    assert (half[0], full[0], over[0]) == pytest.approx((0.3e-3 * 0.25, 0.3e-3, 0.3e-3 + 1.2e-3 * 0.5))
    assert over[1] == 0.0  # h1 has no guests: its Dom0 wakes at once
