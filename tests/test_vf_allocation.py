"""VF holder selection with hysteresis, and hierarchical rate tiers."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sova.plan.vf_allocation import Candidate, assign_tiers, choose_holders, clearly_exceeds, rate_tiers


def c(vm, net, io=10.0, demand=0.0):
    return Candidate(vm, net, io, demand)


def names(cands):
    return sorted(x.vm for x in cands)


def test_free_vfs_go_to_the_most_intensive():
    pq = [c("a", 0.9), c("b", 0.5), c("c", 0.7), c("d", 0.1)]
    assert names(choose_holders(pq, set(), 2, 0.1, 2.0)) == ["a", "c"]


def test_no_vf_free_and_equal_newcomer_does_not_flap():
    pq = [c("a", 0.5), c("b", 0.5), c("new", 0.52)]
    assert names(choose_holders(pq, {"a", "b"}, 2, 0.1, 2.0)) == ["a", "b"]


def test_a_clearly_stronger_newcomer_displaces_the_weakest_holder():
    pq = [c("a", 0.9), c("b", 0.3), c("new", 0.6)]
    assert names(choose_holders(pq, {"a", "b"}, 2, 0.1, 2.0)) == ["a", "new"]


def test_at_equal_network_intensity_the_purer_io_vm_wins():
    """Sova §5.1 at 20 min: VM4 (pure netperf) takes the VF of VM3 (netperf + lookbusy)."""
    pq = [c("vm3", 0.30, io=2.3), c("vm4", 0.30, io=40.0), c("vm1", 0.5)]
    assert names(choose_holders(pq, {"vm3", "vm1"}, 2, 0.1, 2.0)) == ["vm1", "vm4"]


def test_a_vm_that_stops_being_intensive_loses_its_vf():
    assert names(choose_holders([c("b", 0.4)], {"a", "b"}, 2, 0.1, 2.0)) == ["b"]


def test_all_equal_keeps_the_holders_and_fills_by_name():
    pq = [c(x, 0.5) for x in "dcba"]
    assert names(choose_holders(pq, set(), 2, 0.1, 2.0)) == ["a", "b"]
    assert names(choose_holders(pq, {"c", "d"}, 2, 0.1, 2.0)) == ["c", "d"]


def test_no_slots():
    assert choose_holders([c("a", 1.0)], set(), 0, 0.1, 2.0) == []


def test_tiers_step_by_delta_and_fill_the_port():
    assert rate_tiers(4, 10e9, 1e9, 1e9) == pytest.approx([1e9, 2e9, 3e9, 4e9])
    assert rate_tiers(1, 10e9, 0.0, 0.0) == pytest.approx([10e9])
    t = rate_tiers(4, 10e9, 0.0, 0.25e9)
    assert np.diff(t) == pytest.approx([0.25e9] * 3) and t.sum() == pytest.approx(10e9)


def test_automatic_tiers_cover_every_demand_when_the_port_allows():
    demands = np.array([0.07e9, 0.26e9, 1.05e9, 2.1e9])
    t = rate_tiers(4, 10e9, 0.0, 0.0, demands)
    assert (t >= np.sort(demands)).all() and t.sum() == pytest.approx(10e9)
    assert np.diff(t) == pytest.approx(np.full(3, np.diff(t)[0]))  # an arithmetic progression (Eq. 7)


def test_a_progression_cannot_always_cover_demands_that_fit():
    """Eq. 7's limit: eight Sova §5.4 servers need 6.9 Gb/s, yet no progression covers them in 10 Gb/s."""
    demands = np.array([0.07e9, 0.07e9, 0.26e9, 0.26e9, 1.05e9, 1.05e9, 2.1e9, 2.1e9])
    t = rate_tiers(8, 10e9, 0.0, 0.0, demands)
    assert t.sum() == pytest.approx(10e9) and (t < np.sort(demands)).any()


def test_automatic_tiers_share_a_short_port_in_proportion():
    t = rate_tiers(2, 10e9, 0.0, 0.0, np.array([8e9, 8e9]))
    assert t == pytest.approx([5e9, 5e9])


@given(st.lists(st.floats(0, 5e9), min_size=1, max_size=12))
def test_automatic_tiers_cover_demands_that_fit(demands):
    d = np.array(demands)
    t = rate_tiers(len(d), 30e9, 0.0, 0.0, d)
    if len(d) * d.max() <= 30e9:  # even equal tiers at the largest demand fit: every demand is covered
        assert (t >= np.sort(d) - 1e-3).all()
    assert t.sum() <= 30e9 * (1 + 1e-9)


@given(st.integers(1, 63), st.floats(1e8, 1e11), st.floats(0, 5e9), st.floats(0, 2e9), st.floats(0, 1e10))
def test_tiers_never_exceed_the_port(slots, bw, vf0, delta, spread):
    t = rate_tiers(slots, bw, vf0, delta, np.linspace(0, spread, slots))
    assert len(t) == slots and t.sum() <= bw * (1 + 1e-9) and (np.diff(t) >= -1e-6).all()


def test_highest_tier_to_highest_demand():
    tiers = assign_tiers([c("a", 1, demand=1e9), c("b", 1, demand=5e9)], np.array([1e9, 2e9]))
    assert tiers == {"b": 2e9, "a": 1e9}


def test_tiers_do_not_flap_between_close_demands():
    tiers = np.array([1e9, 2e9])
    current = {"a": 2e9, "b": 1e9}
    close = [c("a", 1, demand=1.00e9), c("b", 1, demand=1.05e9)]
    assert assign_tiers(close, tiers, current, margin=0.1) == {"a": 2e9, "b": 1e9}
    clear = [c("a", 1, demand=1.0e9), c("b", 1, demand=1.5e9)]
    assert assign_tiers(clear, tiers, current, margin=0.1) == {"b": 2e9, "a": 1e9}


@given(st.floats(0.01, 1), st.floats(0.01, 1), st.floats(0.01, 100), st.floats(0.01, 100))
def test_no_two_vms_can_take_each_others_vf(net_a, net_b, io_a, io_b):
    a, b = c("a", net_a, io_a), c("b", net_b, io_b)
    assert not (clearly_exceeds(a, b, 0.2, 2.0) and clearly_exceeds(b, a, 0.2, 2.0))


def _tiers_in_numpy(slots, bandwidth, vf0, delta, demands):
    """Eq. 7 as arrays, operation by operation (the reference the plain-float rate_tiers must equal bit for
    bit, so that decisions do not move when the code gets faster); the covering step by brute force."""
    d = np.sort(np.asarray(demands, dtype=float))
    n = np.arange(slots)
    if delta <= 0 and vf0 <= 0:
        steps = [0.0] + [max((d[j] - d[i]) / (j - i), 0.0) for i in range(slots) for j in range(i + 1, slots)]
        costs = [slots * float((d - n * step).max()) + step * slots * (slots - 1) / 2 for step in steps]
        delta = min(step for step, cost in zip(steps, costs, strict=True) if cost <= min(costs))
    elif delta <= 0:
        delta = max(float(((d - vf0) / np.maximum(n, 1)).max()), 0.0)
    if vf0 <= 0:
        vf0 = float((d - n * delta).max(initial=0.0))
        vf0 += max(bandwidth - (slots * vf0 + delta * slots * (slots - 1) / 2), 0.0) / slots
    tiers = vf0 + n * delta
    total = tiers.sum()
    return tiers * (bandwidth / total) if total > bandwidth else tiers


@given(
    st.lists(st.floats(0, 5e9), min_size=1, max_size=12),
    st.floats(1e8, 1e11),
    st.sampled_from([0.0, 1e8, 1e9]),
    st.sampled_from([0.0, 2.5e8]),
)
def test_rate_tiers_equal_the_array_formulation_bit_for_bit(demands, bandwidth, vf0, delta):
    expected = _tiers_in_numpy(len(demands), bandwidth, vf0, delta, demands)
    assert rate_tiers(len(demands), bandwidth, vf0, delta, demands).tolist() == expected.tolist()
