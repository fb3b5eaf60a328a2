"""VM selection of Beloglazov and Buyya (MMT, MU, RS, MC) against cases computed by hand, and MC's R^2
against the multiple-correlation identity R_i^2 = 1 - 1 / (C^-1)_ii."""

from __future__ import annotations

import numpy as np
import pytest

from sova.plan.vm_selection import (
    correlation_r2,
    maximum_correlation,
    minimum_migration_time,
    minimum_utilisation,
    random_selection,
    select_until_relieved,
)

MEMORY = np.array([870.0, 1740.0, 613.0])  # CloudSim's PlanetLab VM types' MiB


def test_mmt_takes_the_vm_whose_memory_moves_fastest():
    assert minimum_migration_time(MEMORY, np.ones(3)) == 2
    assert minimum_migration_time(MEMORY, np.array([1.0, 1.0, 0.5])) == 0  # 613 / 0.5 = 1226 > 870


def test_mu_takes_the_least_used_vm_and_the_first_of_a_tie():
    assert minimum_utilisation(np.array([0.5, 0.2, 0.2])) == 1


def test_rs_is_uniform_and_repeats_with_its_seed():
    draws = [random_selection(4, np.random.default_rng(7)) for _ in range(3)]
    assert len(set(draws)) == 1
    rng = np.random.default_rng(1)
    counts = np.bincount([random_selection(4, rng) for _ in range(4000)], minlength=4)
    assert counts.min() > 900 and counts.max() < 1100


def test_mc_r2_matches_the_multiple_correlation_identity():
    rng = np.random.default_rng(3)
    a, b, noise = rng.random(30), rng.random(30), rng.random(30)
    history = np.array([a, b, 0.6 * a + 0.3 * b + 0.1 * noise, rng.random(30)])
    inverse = np.linalg.inv(np.corrcoef(history))
    assert correlation_r2(history) == pytest.approx(1 - 1 / np.diag(inverse), rel=1e-9)
    assert maximum_correlation(history, np.ones(4), np.ones(4)) == 2  # the one the others explain


def test_mc_falls_back_to_mmt_with_fewer_samples_than_vms():
    history = np.random.default_rng(0).random((3, 2))
    assert correlation_r2(history) is None
    assert maximum_correlation(history, MEMORY, np.ones(3)) == 2


def test_vms_leave_one_at_a_time_until_the_host_is_no_longer_overloaded():
    util = {0: 0.3, 1: 0.5, 2: 0.2}  # the host at 1.0, its threshold 0.6

    def overloaded(chosen):
        return sum(u for vm, u in util.items() if vm not in chosen) > 0.6

    mu = select_until_relieved(
        [0, 1, 2], lambda left: minimum_utilisation(np.array([util[v] for v in left])), overloaded
    )
    assert mu == [2, 0]  # 0.8 after the first, 0.5 after the second
    assert select_until_relieved([0, 1, 2], lambda left: 0, lambda chosen: False) == []
