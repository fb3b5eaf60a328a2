"""CloudSim 3.0.3's PABFD and estimators as power-aware settings, each on a case worked out by hand:
the power rise taken from the round's start (``rise_from``), the detector run again on a host's history
with the VM's added (``after_check``), IQR's quartiles by rank (``quartiles``), MU's utilisation of the VM's
own MIPS (``mu_of``), and what Sova counts where CloudSim migrates a VM twice in a round."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import make_scenario
from sova.analyze.cpu_asked import asked_in
from sova.analyze.overload import Estimators, iqr_threshold, overloaded
from sova.drivers.sim import SimDriver
from sova.model.knowledge import Knowledge
from sova.plan.power_aware import PowerAware, _net_moves
from sova.plan.power_aware_placement import Cluster, consolidate, pabfd
from sova.sim.engine import Simulator

LINE = [100.0 + 10 * tenth for tenth in range(11)]  # P(u) = 100 + 100 u: 0.1 W per MIPS on 1,000 MIPS


def _cluster(load, vm_host, vm_demand, rise_from="now", **history) -> Cluster:
    hosts = len(load)
    return Cluster(
        capacity=np.full(hosts, 1000.0),
        load=np.array(load, dtype=float),
        memory_free=np.full(hosts, 4096.0),
        curves=np.array([LINE] * hosts),
        on=np.ones(hosts, dtype=bool),
        limit=np.full(hosts, 1 / 1.2),
        vm_host=np.array(vm_host),
        vm_demand=np.array(vm_demand, dtype=float),
        vm_memory=np.zeros(len(vm_host)),
        rise_from=rise_from,
        **history,
    )


def test_a_rise_from_now_keeps_filling_the_host_a_round_chose_first():
    # hosts 0 and 1 at 100 MIPS; VM 2 (200) and VM 3 (100) come off host 2 (excluded)
    cluster = _cluster([100, 100, 300], [0, 1, 2, 2], [100, 100, 200, 100])
    pabfd(cluster, [2, 3], np.array([True, True, False]))
    # VM 2: a tie, host 0; VM 3: host 0 at 300 -> 400 is +10 W, host 1 at 100 -> 200 +10 W: a tie, host 0
    assert cluster.moves == [(2, 0), (3, 0)]


def test_a_rise_from_the_round_start_charges_a_host_for_what_the_round_put_on_it_already():
    cluster = _cluster([100, 100, 300], [0, 1, 2, 2], [100, 100, 200, 100], rise_from="round-start")
    pabfd(cluster, [2, 3], np.array([True, True, False]))
    # VM 3: host 0 would be P(400) - P(100) = +30 W against host 1's P(200) - P(100) = +10 W
    assert cluster.moves == [(2, 0), (3, 1)]


def _woken(rise_from: str) -> tuple[list[int], list[tuple[int, int]]]:
    """Hosts 0 and 1 hold VM 0 (500 MIPS) and VM 1 (100); host 2 is off; the overload phase moved VM 2
    (50) off overloaded host 3 onto host 2. Then consolidation: (the hosts it emptied, every move)."""
    cluster = _cluster([500, 100, 0, 50], [0, 1, 3], [500, 100, 50], rise_from=rise_from)
    cluster.on[2] = False
    cluster.move(2, 2)
    return consolidate(cluster, np.array([False, False, False, True])), cluster.moves


def test_a_consolidation_from_now_empties_the_host_the_round_just_woke_first():
    # host 2 (50 MIPS now) is the least loaded: VM 2 goes on to host 0 (a tie with host 1), then host 1's VM
    assert _woken("now") == ([2, 1], [(2, 2), (2, 0), (1, 0)])


def test_a_consolidation_from_the_round_start_leaves_the_host_the_round_woke_alone():
    # host 2 was off as the round began: neither tried nor given VMs; host 1 empties onto host 0
    assert _woken("round-start") == ([1], [(2, 2), (1, 0)])


def _lr(history: np.ndarray) -> np.ndarray:
    return overloaded(history, "lr", 0.8, 1.2, Estimators(fit="ols"))


def test_the_history_check_refuses_a_host_a_vm_trending_up_would_overload_that_the_limit_accepts():
    # 10 periods of MIPS, newest last. Host 0: 300 throughout; host 1: 500 falling to 50; the VM: 50 rising
    # to 500. After: host 0 reads 350 ... 800 (now 0.8, within LR's 1/1.2), predicted 0.85 x 1.2 >= 1;
    # host 1 reads 550 throughout, predicted 0.55 x 1.2 < 1
    host = np.array([[300.0] * 10, np.arange(500.0, 0.0, -50.0), np.zeros(10)])
    vm = np.array([np.zeros(10), np.zeros(10), np.arange(50.0, 501.0, 50.0)])
    by_limit = _cluster([300, 50, 500], [0, 1, 2], [0, 0, 500])
    assert pabfd(by_limit, [2], np.array([True, True, False])) == [] and by_limit.moves == [(2, 0)]
    by_history = _cluster([300, 50, 500], [0, 1, 2], [0, 0, 500], history=host, vm_history=vm, judge=_lr)
    assert pabfd(by_history, [2], np.array([True, True, False])) == [] and by_history.moves == [(2, 1)]
    assert list(by_history.history[1]) == [550.0] * 10  # the move carried the VM's history along


def test_the_history_check_also_says_when_a_host_is_relieved():
    history = np.array([np.arange(100.0, 1001.0, 100.0)])  # 0.1 ... 1.0: overloaded
    vm_history = np.array([np.arange(50.0, 501.0, 50.0), np.full(10, 100.0)])  # half of the trend; a flat VM
    cluster = _cluster([1000], [0, 0], [500, 100], history=history, vm_history=vm_history, judge=_lr)
    assert cluster.overloaded_without(0, [1])  # 0.0 ... 0.9 still trends to 1.0 x 1.2
    assert not cluster.overloaded_without(0, [0])  # 0.05 ... 0.5: 0.55 x 1.2


def test_iqr_quartiles_by_rank_take_the_round_p_n_plus_1_th_smallest():
    history = np.array([np.arange(1.0, 13.0) / 100])  # 0.01 ... 0.12, n = 12
    # ranks round(3.25) = 3 and round(9.75) = 10: 0.03 and 0.10; interpolated: 0.0375 and 0.0925
    assert iqr_threshold(history, 1.5, "rank") == pytest.approx([1 - 1.5 * 0.07])
    assert iqr_threshold(history, 1.5) == pytest.approx([1 - 1.5 * 0.055])


def test_a_vm_a_round_moves_twice_migrates_once_to_where_it_ends():
    # the overload phase puts VM 0 on host 1; consolidation then empties host 1 onto host 2
    assert _net_moves([(0, 1), (3, 2), (0, 2)], np.array([0, 1, 1, 0])) == [(0, 2), (3, 2)]
    assert _net_moves([(0, 1), (0, 0)], np.array([0])) == []  # back where it was: no migration


def _mu_pick(mu_of: str) -> str:
    """MU's choice between a 500-MIPS VM busy in full (500 MIPS) and a 2,500-MIPS VM at 30 % (750 MIPS), on
    a host of 2,660-MIPS cores, from 300 s of what the simulator reports."""
    scenario = make_scenario(
        scenario={"duration": 300, "step": 300},
        hosts=[{"name": "h1", "cores": 2, "mips": 2660}],
        vms=[
            {"name": "small", "host": "h1", "vcpus": 1, "mips": 500},
            {"name": "big", "host": "h1", "vcpus": 1, "mips": 2500},
        ],
        workloads=[{"vm": "small", "kind": "lookbusy"}, {"vm": "big", "kind": "lookbusy", "util": 0.3}],
        simulator={"idle_guest_cpu": 0.0},
    )
    sim = Simulator(scenario)
    driver = SimDriver(sim)
    knowledge = Knowledge(float("inf"))
    knowledge.add(driver.observe())
    sim.step()
    knowledge.add(driver.observe())
    snap, asked = asked_in(knowledge, 300.0)
    assert asked == pytest.approx([500, 750], rel=1e-3)
    policy = PowerAware(**{**PowerAware.defaults(), "selection": "mu", "mu_of": mu_of})
    return snap.vms[policy._choose([0, 1], snap, asked, None)]


def test_mu_takes_the_vm_least_busy_on_its_host_or_as_cloudsim_of_its_own_mips():
    assert _mu_pick("host") == "small"  # 500 / 2,660 = 0.19 of a core against 750 / 2,660 = 0.28
    assert _mu_pick("vm") == "big"  # 750 / 2,500 = 0.3 of its own MIPS against 500 / 500 = 1.0
