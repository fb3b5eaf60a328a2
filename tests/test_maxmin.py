"""Max-min fairness: known cases, and properties checked against a slow reference."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.sparse import csr_matrix

from sova.sim.maxmin import max_min_fair


def solve(dense, cap, demand):
    return max_min_fair(csr_matrix(np.asarray(dense, dtype=float)), np.asarray(cap, float), np.asarray(demand, float))


def reference(dense, cap, demand):
    """Progressive filling, one saturation event at a time, in plain Python."""
    a = np.asarray(dense, float)
    n = a.shape[1]
    x = np.zeros(n)
    active = np.asarray(demand) > 0
    while active.any():
        load = a @ x
        slope = a @ active
        with np.errstate(divide="ignore", invalid="ignore"):
            inc = np.where(slope > 0, (cap - load) / slope, np.inf)
        step = min(inc.min(), (np.asarray(demand) - x)[active].min())
        x[active] += step
        full = (slope > 0) & (a @ x >= cap - 1e-9 * np.maximum(cap, 1))
        frozen = ((a[full] > 0).any(axis=0)) | (x >= np.asarray(demand) - 1e-12)
        active &= ~frozen
    return x


def test_two_links_classic_case():
    # f0 on link0, f1 on both, f2 on link1: link1 (cap 4) splits 2/2, f0 takes the rest of link0
    assert solve([[1, 1, 0], [0, 1, 1]], [10, 4], [np.inf] * 3) == pytest.approx([8, 2, 2])


def test_a_flow_below_its_fair_share_keeps_its_demand():
    assert solve([[1, 1, 1]], [9], [1, np.inf, np.inf]) == pytest.approx([1, 4, 4])


def test_coefficients_weight_resource_use():
    # a CPU resource where flow 0 costs twice as much per unit
    assert solve([[2, 1]], [6], [np.inf, np.inf]) == pytest.approx([2, 2])


def test_unbounded_flow_without_resources_is_an_error():
    with pytest.raises(ValueError, match="unlimited demand"):
        solve(np.zeros((1, 1)), [1], [np.inf])


@st.composite
def instances(draw):
    n_res = draw(st.integers(1, 6))
    n_flows = draw(st.integers(1, 8))
    a = np.array(
        [[draw(st.sampled_from([0, 0, 1, 1, 0.5, 2])) for _ in range(n_flows)] for _ in range(n_res)], dtype=float
    )
    for f in range(n_flows):  # every flow uses something
        if not a[:, f].any():
            a[draw(st.integers(0, n_res - 1)), f] = 1.0
    cap = np.array([draw(st.floats(0.5, 20)) for _ in range(n_res)])
    demand = np.array([draw(st.one_of(st.just(np.inf), st.floats(0, 15))) for _ in range(n_flows)])
    return a, cap, demand


@given(instances())
def test_no_resource_over_capacity_and_no_flow_over_demand(inst):
    a, cap, demand = inst
    x = solve(a, cap, demand)
    assert (a @ x <= cap * (1 + 1e-7) + 1e-9).all()
    assert (x <= demand * (1 + 1e-9) + 1e-12).all()
    assert (x >= 0).all()


@given(instances())
def test_every_flow_is_satisfied_or_bottlenecked(inst):
    """Max-min: a flow below its demand crosses a saturated resource where no flow gets more than it."""
    a, cap, demand = inst
    x = solve(a, cap, demand)
    load = a @ x
    for f in np.flatnonzero(x < demand * (1 - 1e-7)):
        saturated = (a[:, f] > 0) & (load >= cap * (1 - 1e-6))
        assert saturated.any()
        assert any(x[f] >= x[a[r] > 0].max() * (1 - 1e-6) for r in np.flatnonzero(saturated))


@given(instances())
def test_matches_the_one_event_at_a_time_reference(inst):
    a, cap, demand = inst
    assert solve(a, cap, demand) == pytest.approx(reference(a, cap, demand), rel=1e-6, abs=1e-9)


def test_weights_share_a_resource_in_proportion():
    a = csr_matrix(np.ones((1, 3)))
    x = max_min_fair(a, np.array([12.0]), np.full(3, np.inf), weight=np.array([2.0, 1.0, 1.0]))
    assert x == pytest.approx([6, 3, 3])


@given(instances(), st.lists(st.floats(0.1, 4), min_size=8, max_size=8))
def test_weighted_sharing_stays_feasible_and_bottlenecked(inst, weights):
    a, cap, demand = inst
    w = np.array(weights[: a.shape[1]])
    x = max_min_fair(csr_matrix(a), cap, demand, weight=w)
    load = a @ x
    assert (load <= cap * (1 + 1e-7) + 1e-9).all() and (x <= demand * (1 + 1e-9) + 1e-12).all()
    for f in np.flatnonzero(x < demand * (1 - 1e-7)):
        saturated = (a[:, f] > 0) & (load >= cap * (1 - 1e-6))
        assert any(x[f] / w[f] >= (x / w)[a[r] > 0].max() * (1 - 1e-6) for r in np.flatnonzero(saturated))
