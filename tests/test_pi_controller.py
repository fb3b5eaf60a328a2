"""SASLO's PI controller (Eq. 5-13): pole placement by hand, the closed loop's poles, its step response
(overshoot and settling as designed), and the online least-squares fit of the ARMA model."""

import math

import numpy as np
import pytest

from sova.plan.storage.pi_controller import (
    PiDesign,
    PiState,
    closed_loop_poles,
    place_gains,
    pole_radius_angle,
    step,
)


def test_the_papers_defaults_place_the_dominant_pole_at_radius_0_457_and_angle_1_068():
    r, theta = pole_radius_angle(5, 0.1, 2)
    assert r == pytest.approx(0.02**0.2) == pytest.approx(0.45730505)  # (c/100)^(1/S_t)
    assert theta == pytest.approx(math.pi * math.log(r) / math.log(0.1)) == pytest.approx(1.06749, abs=1e-5)


def test_gains_for_the_ideal_plant_by_hand():
    r, theta = 0.5, math.pi / 3  # cos θ = 1/2
    cp, ci = place_gains(np.array([1.0]), np.array([1.0]), r, theta)
    assert cp[0] == pytest.approx(1 - 0.25)  # (a - r²) / b
    assert ci[0] == pytest.approx((1 + 1 - 2 * 0.5 * 0.5) - 0.75)  # (1 + a - 2 r cos θ) / b - C_P = 0.75
    cp, ci = place_gains(np.array([0.8]), np.array([0.5]), r, theta)
    assert (cp[0], ci[0]) == pytest.approx(((0.8 - 0.25) / 0.5, (1.8 - 0.5) / 0.5 - 1.1))  # (1.1, 1.5)


@pytest.mark.parametrize(("a", "b"), [(1.0, 1.0), (0.8, 0.5), (1.2, 2.0)])
def test_the_closed_loop_poles_of_eq_13_are_where_they_were_placed(a, b):
    r, theta = pole_radius_angle(5, 0.1, 2)
    cp, ci = place_gains(np.array([a]), np.array([b]), r, theta)
    poles = closed_loop_poles(a, b, cp[0], ci[0])
    assert sorted(np.abs(poles)) == pytest.approx([r, r])
    assert sorted(np.angle(poles)) == pytest.approx([-theta, theta])


def run_loop(a: float, b: float, target: float, epochs: int, start: float = 0.0):
    """Close the loop around a plant Th(k+1) = a Th(k) + b u(k) (the controller learns a and b)."""
    design = PiDesign()
    state = PiState.fresh(1, *design.poles())
    throughput = np.array([start])
    out = []
    for _ in range(epochs):
        control = step(state, throughput, np.array([target]), design)
        throughput = a * throughput + b * control
        out.append(float(throughput[0]))
    return np.array(out), state


def test_a_step_on_the_ideal_plant_settles_within_2_percent_in_the_designed_5_epochs_or_so():
    response, _ = run_loop(1.0, 1.0, 100.0, 30)
    r, theta = pole_radius_angle(5, 0.1, 2)
    cp, ci = place_gains(np.array([1.0]), np.array([1.0]), r, theta)
    # the first epoch is the PI's proportional kick, (C_P + C_I) x the step: 1.559 x 100. The poles' r^(π/θ)
    # = 10 % ignores the controller's zero at C_P / (C_P + C_I) = 0.51, so the first overshoot is 56 %.
    assert response[0] == pytest.approx((cp[0] + ci[0]) * 100) == pytest.approx(155.9, abs=0.05)
    within_10 = np.flatnonzero(np.abs(response - 100) <= 10)
    assert within_10[0] + 1 == 3  # first SLO compliance (±10 %) at the 3rd epoch (the paper: 3.5-4.5)
    outside_2 = np.flatnonzero(np.abs(response - 100) > 2)
    assert outside_2[-1] + 1 == 5  # within c = 2 % from the 6th epoch on
    assert response[-1] == pytest.approx(100, rel=1e-6)  # no steady-state error (Eq. 12)


def test_the_least_squares_fit_learns_a_plant_that_is_not_ideal_and_still_reaches_the_target():
    response, state = run_loop(0.7, 0.4, 500.0, 60, start=100.0)
    assert state.a[0] == pytest.approx(0.7, abs=1e-6) and state.b[0] == pytest.approx(0.4, abs=1e-6)
    assert response[-1] == pytest.approx(500, rel=1e-6)


def test_a_vm_whose_throughput_does_not_follow_its_limit_keeps_its_gains():
    design = PiDesign()
    state = PiState.fresh(2, *design.poles())
    before = state.cp.copy(), state.ci.copy()
    for _ in range(5):  # VM 0 is stuck at 50 whatever the limit; VM 1 has no measurement at all
        step(state, np.array([50.0, np.nan]), np.array([100.0, 100.0]), design)
    assert np.all(np.isfinite(state.cp)) and state.cp[1] == before[0][1] and state.ci[1] == before[1][1]
    assert state.integral[1] == 0  # no measurement: the integral holds


def test_bad_designs_are_refused():
    with pytest.raises(ValueError, match="settling time"):
        pole_radius_angle(0, 0.1, 2)
    with pytest.raises(ValueError, match="overshoot"):
        pole_radius_angle(5, 1.5, 2)
    with pytest.raises(ValueError, match="criterion"):
        pole_radius_angle(5, 0.1, float("nan"))


def test_a_vm_its_limit_does_not_hold_back_gets_no_more_limit_and_its_integral_holds():
    design = PiDesign()
    state = PiState.fresh(2, *design.poles())
    state.integral[:] = 5.0
    control = step(state, np.array([300.0, 300.0]), np.array([400.0, 200.0]), design, np.array([False, False]))
    assert control[0] == 0 and state.integral[0] == 5.0  # wants more: nothing a limit can give
    assert control[1] < 0  # above its target: the limit still comes down


def test_the_fit_ignores_epochs_whose_limit_hardly_moved_and_refuses_implausible_models():
    design = PiDesign()
    state = PiState.fresh(1, *design.poles())
    rng = np.random.default_rng(4)
    for _ in range(200):  # on target: u ~ 0, the throughput only jitters
        step(state, np.array([500.0 + rng.normal(0, 0.5)]), np.array([500.0]), design)
    assert state.a[0] == 1.0 and state.b[0] == 1.0  # no excitation, no fit: the ideal model stays
