"""SASLO's IO rate limiter (Eq. 4): the unrolled time stamps against the recurrence, by hand and by
property."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sova.plan.storage.rate_limiter import dispatched, stamps


def recurrence(arrivals, rate, previous=-np.inf):
    out, last = [], previous
    for arrival in arrivals:
        last = max(last + 1 / rate, arrival)
        out.append(last)
    return out


def test_a_burst_is_spaced_one_over_the_rate_apart_and_a_late_arrival_keeps_its_own_time():
    assert stamps([0.0, 0.0, 0.0, 0.5], 10.0).tolist() == pytest.approx([0.0, 0.1, 0.2, 0.5])


def test_the_first_stamp_follows_the_previous_epochs_last():
    assert stamps([0.0, 0.0, 0.0, 0.5], 10.0, previous=0.05).tolist() == pytest.approx([0.15, 0.25, 0.35, 0.5])


def test_an_epoch_dispatches_the_requests_stamped_by_its_end():
    assert dispatched([0.0, 0.0, 0.0, 0.5], 10.0, until=0.2) == (3, pytest.approx(0.2))
    assert dispatched([0.3], 10.0, until=0.2, previous=0.1) == (0, 0.1)


def test_bad_input_is_refused_with_what_was_expected():
    with pytest.raises(ValueError, match="rate must be > 0"):
        stamps([0.0], 0.0)
    with pytest.raises(ValueError, match="rate must be > 0"):
        stamps([0.0], float("nan"))
    with pytest.raises(ValueError, match="sorted"):
        stamps([1.0, 0.0], 5.0)


@settings(max_examples=200, deadline=None)
@given(
    gaps=st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=40),
    rate=st.floats(0.5, 1000),
    previous=st.one_of(st.just(-np.inf), st.floats(-1, 5)),
)
def test_the_unrolled_stamps_equal_the_recurrence(gaps, rate, previous):
    arrivals = np.cumsum(gaps)
    assert stamps(arrivals, rate, previous) == pytest.approx(recurrence(arrivals, rate, previous))
