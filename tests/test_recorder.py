"""Run-level response-time percentiles from per-step (count, floor, mean) records."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sova.sim.recorder import mixture_quantile


def test_one_component_is_a_shifted_exponential():
    q = mixture_quantile(np.array([100.0]), np.array([0.002]), np.array([0.001]), 0.95)
    assert q == pytest.approx(0.002 + 0.001 * math.log(20), rel=1e-9)


def test_empty_steps_carry_no_weight():
    w, fl, ex = np.array([0.0, 50.0]), np.array([9.0, 1.0]), np.array([9.0, 0.5])
    assert mixture_quantile(w, fl, ex, 0.99) == pytest.approx(1 + 0.5 * math.log(100), rel=1e-9)


@given(st.lists(st.tuples(st.floats(1, 1e4), st.floats(0, 1), st.floats(1e-4, 1)), min_size=1, max_size=6))
def test_mixture_quantile_inverts_the_mixture_cdf(parts):
    w, fl, ex = (np.array(x) for x in zip(*parts, strict=True))
    q = mixture_quantile(w, fl, ex, 0.95)
    cdf = (w / w.sum() * np.where(q > fl, 1 - np.exp(-(q - fl) / ex), 0)).sum()
    assert cdf == pytest.approx(0.95, abs=1e-6)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=300))
def test_the_recorders_percentiles_are_numpys(values):
    from sova.sim.recorder import HOST_PERCENTILES, percentiles

    expected = np.percentile(np.array(values), HOST_PERCENTILES)
    assert percentiles(np.array(values), HOST_PERCENTILES) == pytest.approx(expected, abs=1e-12)
