"""The papers' equations against values computed by hand."""

import math

import numpy as np
import pytest

from sova.analyze.forecast import ar1_forecast, ar1_parameters
from sova.analyze.intensity import io_degree, io_factor, net_degree, network_factor
from sova.analyze.samples import Samples
from sova.analyze.volume import migration_factor, sandpiper_volume, skewness, volume_to_size


def samples(gotten, blocked, packets, data=None, vcpus=None):
    g = np.array(gotten, float)
    return Samples(
        seconds=np.ones(len(g)),
        gotten=g,
        blocked=np.array(blocked, float),
        waiting=np.zeros_like(g),
        packets=np.array(packets, float),
        data=np.array(data if data is not None else packets, float),
        vcpus=np.array(vcpus if vcpus is not None else [1.0] * g.shape[1]),
    )


# two VMs, four one-second samples
S = samples(
    gotten=[[0.5, 0.01], [0.5, 0.02], [1.0, 0.01], [0.25, 0.02]],
    blocked=[[0.5, 0.99], [0.5, 0.98], [0.0, 0.99], [0.75, 0.98]],
    packets=[[0, 100], [0, 300], [0, 0], [0, 500]],
    data=[[0, 2048], [0, 4096], [0, 0], [0, 8192]],
)


def test_io_factor_is_the_mean_ratio_of_blocked_to_gotten():
    assert io_factor(S) == pytest.approx([(1 + 1 + 0 + 3) / 4, (99 + 49 + 99 + 49) / 4])


def test_network_factor_by_hand():
    # VM2: traffic in 3 of 4 samples; its own min 0 and max 500 -> 0.2, 0.6, 1.0
    freq, avg = 3 / 4, (0.2 + 0.6 + 1.0) / 3
    assert network_factor(S, eps=0.7) == pytest.approx([0.0, 0.7 * freq + 0.3 * avg])


def test_network_factor_does_not_depend_on_the_rate_a_vm_gets():
    """A VF rate cap scales every sample of a VM alike; its NF must not move (else VFs flap)."""
    fast = samples([[0.1]] * 4, [[0.9]] * 4, [[0], [900], [0], [900]])
    capped = samples([[0.1]] * 4, [[0.9]] * 4, [[0], [200], [0], [200]])
    assert network_factor(fast, 0.7) == pytest.approx(network_factor(capped, 0.7))
    assert network_factor(fast, 0.7) == pytest.approx([0.7 * 0.5 + 0.3 * 1.0])


def test_a_vm_without_traffic_has_network_factor_zero():
    quiet = samples([[0.5]], [[0.5]], [[0]])
    assert network_factor(quiet, eps=0.5) == pytest.approx([0.0])


def test_io_degree_is_one_hundred_times_the_idle_share():
    # VM1: 2.25 s of CPU in 4 s on 1 vCPU -> 56.25 % -> 43.75
    assert io_degree(S) == pytest.approx([43.75, 100 * (1 - 0.06 / 4)])
    two = samples([[1.0], [1.0]], [[1.0], [1.0]], [[0], [0]], vcpus=[2])
    assert io_degree(two) == pytest.approx([50.0])


def test_net_degree_by_hand():
    # VM2: data 14 KiB over 4 samples -> 3.5 KiB per sample; traffic in 3 of 4
    assert net_degree(S, eps=0.7) == pytest.approx([0.0, 0.7 * 3.5 + 0.3 * 0.75])


def test_skewness_volume_of_a_host_and_of_its_vms():
    r = np.array([0.2, 0.4, 0.6])  # mean 0.4 -> ratios 0.5, 1, 1.5
    assert skewness(r) == pytest.approx(math.sqrt(0.25 + 0 + 0.25))
    assert skewness(np.array([0.5, 0.5, 0.5])) == pytest.approx(0.0)
    vms = np.array([[0.1, 0.4, 0.2], [0.0, 0.0, 0.0]])
    expected = math.sqrt((0.25 - 1) ** 2 + 0 + (0.5 - 1) ** 2)
    assert skewness(vms, np.array([0.4, 0.4])) == pytest.approx([expected, math.sqrt(3)])


def test_migration_factor_prefers_the_smaller_of_two_equal_loads():
    vm_util = np.array([[0.0, 0.4, 0.01], [0.0, 0.4, 0.02]])
    mf = migration_factor(vm_util, host_mean=0.3, size=np.array([512.0, 1024.0]))
    assert mf[0] > mf[1]


def test_sandpiper_volume_and_vsr():
    assert sandpiper_volume(0.5, 0.5, 0.0) == pytest.approx(4.0)
    assert volume_to_size(4.0, 512.0) == pytest.approx(4 / 512)
    assert np.isfinite(sandpiper_volume(1.0, 0.0, 0.0))


def test_ar1_recovers_mean_and_persistence():
    x = np.array([[1.0], [2.0], [1.0], [2.0]])  # mean 1.5, perfectly alternating
    mu, phi, _ = ar1_parameters(x)
    assert mu == pytest.approx([1.5]) and phi[0] < 0
    # phi = sum(d_t d_{t-1}) / sum(d^2) = (-0.75) / 1.0
    assert phi == pytest.approx([-0.75])
    assert ar1_forecast(x) == pytest.approx([1.5 - 0.75 * 0.5])


def test_ar1_of_a_constant_series_is_the_constant():
    assert ar1_forecast(np.full((5, 2), 0.7)) == pytest.approx([0.7, 0.7])


def test_ar1_noise_is_seeded():
    x = np.array([[0.1], [0.5], [0.3], [0.9], [0.4]])
    a = ar1_forecast(x, np.random.default_rng(1))
    b = ar1_forecast(x, np.random.default_rng(1))
    assert a == pytest.approx(b) and a != pytest.approx(ar1_forecast(x))
