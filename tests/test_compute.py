"""Proportional-share CPU: weights honoured, caps respected, work conserving."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sova.sim.compute import weighted_share


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
