"""The minimax objective and the placement algorithms on small problems with known answers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix

from sova.model.scenario import TopologySpec
from sova.plan.placement.annealing import anneal
from sova.plan.placement.fabric import levels_for
from sova.plan.placement.greedy_fill import greedy_fill
from sova.plan.placement.greedy_net import greedy_net
from sova.plan.placement.minimax import ENERGIES, Evaluator
from sova.plan.placement.problem import PlacementError, PlacementProblem
from sova.plan.placement.random_placement import random_placement

TREE = TopologySpec(
    kind="three-tier",
    link_speed=100e6,
    racks=2,
    hosts_per_rack=3,
    racks_per_agg=1,
    tor_oversubscription=3.0,
    agg_oversubscription=2.0,
)


def problem(n_vms, traffic, cpu=None, spec=TREE, n_hosts=6, slots=4, **kw) -> PlacementProblem:
    return PlacementProblem(
        vm_names=tuple(f"vm{i}" for i in range(n_vms)),
        host_names=tuple(f"h{i}" for i in range(n_hosts)),
        cpu=np.asarray(cpu if cpu is not None else np.full(n_vms, 0.5), dtype=float),
        host_cores=np.full(n_hosts, 4.0),
        traffic=csr_matrix(np.asarray(traffic, dtype=float)),
        levels=levels_for(spec, n_hosts),
        slots=slots,
        **kw,
    )


@st.composite
def problems(draw):
    n = draw(st.integers(2, 7))
    dense = draw(st.lists(st.floats(0, 80e6), min_size=n * n, max_size=n * n))
    t = np.array(dense).reshape(n, n) * (
        np.array(draw(st.lists(st.booleans(), min_size=n * n, max_size=n * n))).reshape(n, n)
    )
    cpu = draw(st.lists(st.floats(0, 2), min_size=n, max_size=n))
    ext = draw(st.lists(st.floats(0, 10e6), min_size=n, max_size=n))
    return problem(n, t, cpu, external_tx=np.array(ext), external_rx=np.array(ext[::-1]))


@settings(max_examples=60, deadline=None)
@given(problems(), st.data())
def test_incremental_moves_equal_a_full_recomputation(p, data):
    for energy in ENERGIES:
        x = np.array(data.draw(st.lists(st.integers(-1, 5), min_size=p.n_vms, max_size=p.n_vms)))
        ev = Evaluator(p, energy, x)
        for _ in range(6):
            v = data.draw(st.integers(0, p.n_vms - 1))
            ev.move(v, data.draw(st.integers(-1, 5)))
            fresh = Evaluator(p, energy, ev.x)
            assert np.allclose(ev.cpu, fresh.cpu)
            for a, b in zip(ev.out + ev.inn, fresh.out + fresh.inn, strict=True):
                assert np.allclose(a, b, atol=1e-3)
            assert ev.value() == pytest.approx(fresh.value())


@settings(max_examples=40, deadline=None)
@given(problems(), st.data())
def test_scores_for_every_host_equal_placing_the_vm_there(p, data):
    for energy in ENERGIES:
        x = np.array(data.draw(st.lists(st.integers(-1, 5), min_size=p.n_vms, max_size=p.n_vms)))
        v = data.draw(st.integers(0, p.n_vms - 1))
        x[v] = -1
        ev = Evaluator(p, energy, x)
        scores = ev.scores_if_placed(v)
        for h in range(p.n_hosts):
            ev.move(v, h)
            assert scores[h] == pytest.approx(ev.value(), abs=1e-9)
            ev.move(v, -1)


def test_the_objective_is_the_most_utilized_cpu_or_link():
    t = np.zeros((3, 3))
    t[0, 1] = 50e6  # vm0 -> vm1 across racks
    p = problem(3, t, cpu=[1.0, 0.5, 3.0], spec=TopologySpec(**{**TREE.__dict__, "racks_per_agg": 2}))
    x = np.array([0, 3, 3])  # hosts 0-2 rack 0, 3-5 rack 1
    ev = Evaluator(p, "all", x)
    u = ev.utilizations()
    assert u["cpu"][3] == pytest.approx(3.5 / 4)
    assert u["host-up"][0] == pytest.approx(0.5)  # 50 of 100 Mb/s
    assert u["tor-up"][0] == pytest.approx(50e6 / 100e6)  # 3 hosts x 100 Mb/s / 3:1
    assert ev.value() == pytest.approx(0.875)
    assert Evaluator(p, "cpu", x).value() == pytest.approx(0.875)
    ev.move(2, 1)  # the busy VM off host 3
    assert ev.value() == pytest.approx(0.75)  # host 1 now: 3 cores of 4
    # with one aggregation switch per rack, the 50 Mb/s cross the 2:1 agg up-link of 50 Mb/s: full
    assert Evaluator(problem(3, t, cpu=[1.0, 0.5, 3.0]), "all", x).value() == pytest.approx(1.0)


def test_sa_cn_counts_traffic_inside_a_host_and_sa_cntm_does_not():
    t = np.zeros((2, 2))
    t[0, 1] = 80e6
    p = problem(2, t)
    x = np.array([0, 0])
    assert Evaluator(p, "nic", x).value() == pytest.approx(0.8)
    assert Evaluator(p, "nic-tm", x).value() == pytest.approx(0.25)  # only the CPU: 2 x 0.5 cores of 4
    assert Evaluator(p, "all", x).value() == pytest.approx(0.25)


def test_greedy_fill_puts_talking_pairs_together_and_spreads_cpu():
    t = np.zeros((4, 4))
    t[0, 1] = t[1, 0] = 90e6
    t[2, 3] = t[3, 2] = 90e6
    p = problem(4, t, cpu=[1.0, 1.0, 1.0, 1.0], slots=2)
    x = greedy_fill(p)
    assert x[0] == x[1] and x[2] == x[3] and x[0] != x[2]
    assert Evaluator(p, "all", x).value() == pytest.approx(0.5)  # 2 cores of 4, no link used


def test_greedy_fill_keeps_slots_and_memory():
    p = problem(8, np.zeros((8, 8)), n_hosts=6, slots=2, memory=np.full(8, 1000.0), host_memory=np.full(6, 2500.0))
    x = greedy_fill(p)
    assert np.bincount(x, minlength=6).max() <= 2 and (x >= 0).all()


def pairs() -> PlacementProblem:
    """Two pairs of VMs that talk at 90 Mb/s, one core each, two slots per host: the optimum puts each
    pair on one host (no link used) and the pairs apart (2 of 4 cores): 0.5."""
    t = np.zeros((4, 4))
    t[0, 1] = t[1, 0] = t[2, 3] = t[3, 2] = 90e6
    return problem(4, t, cpu=[1.0] * 4, slots=2)


def test_random_placement_keeps_slots_and_memory_and_follows_its_seed():
    p = problem(10, np.zeros((10, 10)), slots=2, memory=np.full(10, 1000.0), host_memory=np.full(6, 2000.0))
    x = random_placement(p, np.random.default_rng(5))
    assert np.bincount(x, minlength=6).max() <= 2
    assert (x == random_placement(p, np.random.default_rng(5))).all()


def test_sa_all_finds_the_pairs_optimum_from_the_worst_start():
    p = pairs()
    worst = np.array([0, 3, 1, 4])  # every pair split across the racks
    x = anneal(p, worst, "all", np.random.default_rng(1), steps=4000)
    assert Evaluator(p, "all", x).value() == pytest.approx(0.5)


def test_sa_c_balances_cpu_but_does_not_see_the_network():
    p = pairs()
    x = anneal(p, np.array([0, 0, 1, 1]), "cpu", np.random.default_rng(1), steps=4000)
    assert Evaluator(p, "cpu", x).value() == pytest.approx(0.25)  # one VM per host
    assert Evaluator(p, "all", x).value() > 0.5  # so the pairs' traffic crosses links


def test_greedy_net_moves_talkers_off_the_hottest_link_until_none_helps():
    p = pairs()
    x = greedy_net(p, np.array([0, 3, 1, 4]))
    assert Evaluator(p, "links", x).value() == pytest.approx(0.0)
    assert x[0] == x[1] and x[2] == x[3]


def test_infeasible_problems_are_refused_with_what_does_not_fit():
    with pytest.raises(PlacementError, match="25 VMs do not fit in 6 hosts of 4 slots"):
        greedy_fill(problem(25, np.zeros((25, 25))))
    big = problem(2, np.zeros((2, 2)), memory=np.array([100.0, 9000.0]), host_memory=np.full(6, 4096.0))
    with pytest.raises(PlacementError, match="VM vm1 needs 9000 MiB; the largest host has 4096 MiB"):
        greedy_fill(big)
    with pytest.raises(ValueError, match="unknown energy"):
        Evaluator(problem(1, np.zeros((1, 1))), "disk", np.zeros(1))


def test_the_mip_is_optimal_on_tiny_instances_checked_by_brute_force():
    from sova.plan.placement.milp import solve

    # small enough to enumerate; slots, memory and CPU all bind somewhere, so the knapsack cuts must be valid
    rng = np.random.default_rng(2)
    star = np.zeros((4, 4))
    star[0, 1:] = 60e6  # vm0 can share its host with two of its three partners: one flow must leave it
    for k in range(6):
        t = star if k == 0 else np.where(rng.random((4, 4)) < 0.5, rng.uniform(10e6, 90e6, (4, 4)), 0.0)
        np.fill_diagonal(t, 0.0)
        mem = rng.uniform(1000, 2500, 4)
        p = problem(
            4,
            t,
            cpu=rng.uniform(0.1, 3, 4),
            n_hosts=6,
            slots=3,
            external_tx=rng.uniform(0, 20e6, 4),
            memory=mem,
            host_memory=np.full(6, 4096.0),
        )
        best = min(
            Evaluator(p, "all", np.array(x)).value()
            for x in itertools.product(range(6), repeat=4)
            if np.bincount(x, minlength=6).max() <= 3 and (np.bincount(x, weights=mem, minlength=6) <= 4096).all()
        )
        r = solve(p, time_limit=20)
        assert r.status == "Optimal" and r.gap == pytest.approx(0.0, abs=1e-6)
        assert r.value == pytest.approx(best) and r.bound == pytest.approx(best, abs=1e-6)


def test_the_mip_starts_from_a_heuristic_and_reports_its_gap():
    from sova.plan.placement.milp import solve

    p = pairs()
    start = np.array([0, 3, 1, 4])
    r = solve(p, start=start, time_limit=10)
    assert r.value <= Evaluator(p, "all", start).value()
    assert r.value == pytest.approx(0.5) and r.bound == pytest.approx(0.5, abs=1e-6)
