"""The overload detectors of Beloglazov and Buyya (THR, IQR, MAD, LR, LRR) against cases computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sova.analyze.overload import (
    adaptive,
    iqr_threshold,
    local_fit,
    mad_threshold,
    regression,
    thr,
    tricube_weights,
)

STEADY = [0.5] * 6 + [0.6] * 6  # Q1 0.5, Q3 0.6; median 0.55, every deviation 0.05
SWINGING = [0.2, 0.8] * 6  # Q1 0.2, Q3 0.8; median 0.5, every deviation 0.3


def test_thr_is_a_strict_threshold_on_the_utilisation_now():
    assert list(thr(np.array([0.79, 0.8, 0.81]), 0.8)) == [False, False, True]


def test_iqr_and_mad_thresholds_by_hand():
    history = np.array([STEADY, SWINGING])
    assert iqr_threshold(history, 1.5) == pytest.approx([1 - 1.5 * 0.1, 1 - 1.5 * 0.6])
    assert mad_threshold(history, 2.5) == pytest.approx([1 - 2.5 * 0.05, 1 - 2.5 * 0.3])
    # the steady host at 0.6 is below 0.85 (IQR) and 0.875 (MAD); the swinging one at 0.8 above 0.1 and 0.25
    assert list(adaptive(history, 1.5, "iqr")) == [False, True]
    assert list(adaptive(history, 2.5, "mad")) == [False, True]


def test_a_history_too_short_for_iqr_mad_or_lr_falls_back_to_a_static_70_percent():
    short = np.array([[0.1] * 10 + [0.75], [0.9] * 10 + [0.65]])  # 11 samples: 12 are needed
    assert list(adaptive(short, 1.5, "iqr")) == list(adaptive(short, 2.5, "mad")) == [True, False]
    assert list(regression(short[:, -9:], 1.2)) == [True, False]  # 9 samples: the window is 10


def test_tricube_weights_by_hand():
    weights = tricube_weights(10)
    assert weights[-1] == 1 and weights[0] == 0
    assert weights[6] == pytest.approx((1 - (1 / 3) ** 3) ** 3)  # three samples from the newest of nine spans
    assert np.all(np.diff(weights) > 0)


def test_lr_extrapolates_a_straight_line_one_sample_ahead_and_scales_it_by_the_safety_parameter():
    x = np.arange(1, 11)
    history = np.array([0.3 + 0.05 * x, 0.2 + 0.05 * x])  # predicted at x = 11: 0.85 and 0.75
    intercept, slope = local_fit(history)
    assert intercept == pytest.approx([0.3, 0.2]) and slope == pytest.approx([0.05, 0.05])
    assert list(regression(history, 1.2)) == [True, False]  # 1.2 x 0.85 = 1.02 >= 1; 1.2 x 0.75 = 0.9
    assert list(regression(history, 1.2, ahead=3)) == [True, True]  # 0.95, 0.85: both reach 1 when x 1.2


def test_lrr_sets_a_lone_spike_aside_where_lr_follows_it():
    flat = np.full(10, 0.5)
    flat[7] = 1.5  # one sample spikes
    lr = local_fit(flat[None, :])
    lrr = local_fit(flat[None, :], robust=True)
    predict = lambda fit: fit[0][0] + fit[1][0] * 11  # noqa: E731
    assert predict(lrr) == pytest.approx(0.5, abs=1e-9)  # the spike's bisquare weight is 0
    assert abs(predict(lr) - 0.5) > 0.05


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 2), min_size=12, max_size=30))
def test_a_flat_history_never_trips_iqr_or_mad_below_one(values):
    """Constant utilisation u: IQR and MAD are 0, so the threshold is 1 and the host is overloaded iff u > 1."""
    level = values[0]
    history = np.full((1, len(values)), level)
    assert adaptive(history, 1.5, "iqr")[0] == adaptive(history, 2.5, "mad")[0] == (level > 1)


RISING_LATE = [0.3] * 8 + [0.7, 0.9]  # mean 0.4; Sxy = 0.8 + 1.05 + 2.25 = 4.1 over Sxx = 82.5


def test_cloudsims_ols_fit_is_an_unweighted_line_by_hand_and_makes_lrr_the_same_as_lr():
    history = np.array([RISING_LATE])
    for robust in (False, True):  # CloudSim 3.0.3: commons-math drops the weights, so LRR's second fit is LR's
        intercept, slope = local_fit(history, 10, robust, fit="ols")
        assert slope == pytest.approx([4.1 / 82.5]) and intercept == pytest.approx([0.4 - 5.5 * 4.1 / 82.5])
    # one sample ahead (x = 11): 0.1267 + 11 x 0.0497 = 0.673; 1.2 x 0.673 = 0.808 < 1
    assert not regression(history, 1.2, fit="ols")[0] and not regression(history, 1.2, robust=True, fit="ols")[0]


def test_the_papers_weighted_fit_follows_the_newest_samples_where_ols_does_not():
    history = np.array([RISING_LATE])
    slope_weighted = local_fit(history, 10)[1][0]
    assert slope_weighted > 1.9 * local_fit(history, 10, fit="ols")[1][0]  # tricube: the last rise weighs most
    # s x prediction: LR 0.996 (not overloaded), LRR 1.005 (overloaded), OLS 0.808 (above)
    assert not regression(history, 1.2)[0] and regression(history, 1.2, robust=True)[0]
