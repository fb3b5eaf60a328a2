"""SASLO's SLO statistics (Eq. 1-3 and AVPE) against hand-computed values."""

import numpy as np
import pytest

from sova.analyze.slo_stats import avpe, performance_error, pf_ratio, sc_rate

SAMPLES = np.array([90.0, 100.0, 110.0, 120.0])  # target 100: errors -10, 0, +10, +20 %


def test_performance_error_is_the_signed_percentage_off_the_target():
    assert performance_error(SAMPLES, 100.0).tolist() == [-10.0, 0.0, 10.0, 20.0]


def test_sc_rate_counts_the_samples_within_minus_and_plus_ten_percent_bounds_included():
    assert sc_rate(SAMPLES, 100.0) == pytest.approx(75.0)
    assert sc_rate(SAMPLES, 100.0, low=5, high=25) == pytest.approx(75.0)  # -10 % is now outside
    assert sc_rate(SAMPLES, 100.0, low=10, high=20) == pytest.approx(100.0)


def test_pf_ratio_is_the_population_standard_deviation_over_the_target():
    # mean 105, deviations -15, -5, 5, 15: variance (225 + 25 + 25 + 225) / 4 = 125
    assert pf_ratio(SAMPLES, 100.0) == pytest.approx(100 * np.sqrt(125) / 100)
    assert pf_ratio(SAMPLES, 50.0) == pytest.approx(2 * np.sqrt(125))


def test_avpe_is_the_absolute_error_of_the_mean():
    assert avpe(SAMPLES, 100.0) == pytest.approx(5.0)
    assert avpe(SAMPLES, 110.0) == pytest.approx(100 * 5 / 110)


def test_every_statistic_scores_each_vm_against_its_own_target():
    rows = np.array([SAMPLES, SAMPLES * 2])
    targets = np.array([100.0, 200.0])
    assert sc_rate(rows, targets).tolist() == pytest.approx([75.0, 75.0])
    assert pf_ratio(rows, targets).tolist() == pytest.approx([np.sqrt(125)] * 2)
    assert avpe(rows, targets).tolist() == pytest.approx([5.0, 5.0])


def test_a_missing_sample_counts_neither_way_and_a_zero_target_has_no_score():
    with_gap = np.array([90.0, np.nan, 110.0, 120.0])
    assert sc_rate(with_gap, 100.0) == pytest.approx(100 * 2 / 3)
    assert np.isnan(sc_rate(SAMPLES, 0.0)) and np.isnan(pf_ratio(SAMPLES, 0.0)) and np.isnan(avpe(SAMPLES, 0.0))
    assert np.isnan(sc_rate(np.zeros((2, 0)), np.array([1.0, 1.0]))).all()
