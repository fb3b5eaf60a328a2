"""Algorithm 2 (hotspots, destinations) and Algorithm 1's migration choice, on their edge cases."""

import numpy as np
import pytest

from helpers import make_scenario
from sova.drivers.sim import SimDriver
from sova.plan.autonomic_manager import migration_signals
from sova.plan.effector import choose_vm
from sova.sim.engine import Simulator


def loads(series):
    """n reports x hosts, NIC load only."""
    x = np.asarray(series, dtype=float)
    out = np.zeros((*x.shape, 3))
    out[:, :, 1] = x
    return out


def test_a_host_above_alpha_in_k_of_n_reports_with_a_hot_forecast_gets_the_coldest_destination():
    sig, hot = migration_signals(loads([[0.9, 0.3, 0.1]] * 5), k=3, alpha=0.7)
    assert hot.tolist() == [True, False, False]
    assert [(s.host, s.destination) for s in sig] == [(0, 2)]


def test_fewer_than_k_reports_above_alpha_is_no_hotspot():
    sig, hot = migration_signals(loads([[0.5, 0.1]] * 3 + [[0.9, 0.1]] * 2), k=3, alpha=0.7)
    assert not hot.any() and sig == []


def test_a_falling_forecast_cancels_the_hotspot():
    series = [[0.95, 0.1], [0.9, 0.1], [0.85, 0.1], [0.75, 0.1], [0.1, 0.1]]
    assert migration_signals(loads(series), k=3, alpha=0.7)[0] == []


def test_no_destination_when_every_other_host_is_at_alpha():
    sig, hot = migration_signals(loads([[0.9, 0.7, 0.75]] * 5), k=3, alpha=0.7)
    assert hot[0] and sig == []


def test_two_hot_hosts_get_different_destinations_hottest_first():
    sig, _ = migration_signals(loads([[0.8, 0.95, 0.2, 0.3]] * 5), k=3, alpha=0.7)
    assert [(s.host, s.destination) for s in sig] == [(1, 2), (0, 3)]


def test_reports_before_the_hosts_last_change_do_not_count():
    valid = np.array([[False, True]] * 4 + [[True, True]])
    assert migration_signals(loads([[0.9, 0.1]] * 5), k=3, alpha=0.7, valid=valid)[0] == []


@pytest.fixture
def snap():
    s = make_scenario(
        hosts=[{"name": "a"}, {"name": "b", "memory": "6GiB", "dom0_memory": "4GiB"}],
        vms=[
            {"name": "big", "host": "a", "memory": "1GiB"},
            {"name": "small", "host": "a", "memory": "512MiB"},
            {"name": "idle", "host": "a", "memory": "512MiB"},
            {"name": "huge", "host": "a", "memory": "4GiB"},
        ],
    )
    return SimDriver(Simulator(s)).observe()


def test_the_largest_mf_moves_and_an_idle_vm_never_does(snap):
    vm_load = np.array([[0.0, 0.4, 0.01], [0.0, 0.35, 0.01], [0.0, 0.0, 0.01], [0.0, 0.0, 0.05]])
    host_load = np.array([0.01, 0.75, 0.08])
    v, _ = choose_vm(snap, vm_load, 0, 1, host_load, set())
    assert snap.vms[v] == "small"  # nearly the same load at half the memory: the larger MF
    assert choose_vm(snap, vm_load, 0, 1, host_load, {"small", "big"}) is None  # idle/huge carry no NIC load


def test_no_vm_moves_when_the_one_that_would_help_does_not_fit(snap):
    vm_load = np.array([[0.0, 0.1, 0.01], [0.0, 0.1, 0.01], [0.0, 0.0, 0.01], [0.0, 0.6, 0.05]])
    # only "huge" carries more than an average share of the NIC, and its 4 GiB do not fit the 2 GiB on b
    assert choose_vm(snap, vm_load, 0, 1, np.array([0.01, 0.8, 0.08]), set()) is None


def test_a_host_with_one_vm_offers_it_if_it_carries_the_load(snap):
    vm_load = np.zeros((4, 3))
    vm_load[0] = [0.0, 0.8, 0.01]
    resident = np.array([0])
    v, _ = choose_vm(snap, vm_load, 0, 1, np.array([0.0, 0.8, 0.01]), set(), resident=resident)
    assert snap.vms[v] == "big"
