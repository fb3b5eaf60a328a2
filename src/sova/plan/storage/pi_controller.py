"""SASLO's PI controller for one VM's IO throughput (Eq. 5-13), vectorized over VMs.

The plant is the ARMA model of Eq. 5, Th(k+1) = a Th(k) + b u(k): u(k) is the change the controller makes
to the VM's IO rate limit, Th the throughput measured in the epoch. Ideally a = b = 1 (the VM gets what
the limiter lets through); a and b are fitted online by least squares over the VM's own epochs, with
exponential forgetting so that a changed device is learned again. Only epochs where the limit moved
(EXCITATION) and held the VM back enter the fit, and only a plausible fit (A_RANGE, B_RANGE) is used.

The controller (Eq. 6-8) is u(k) = C_P e(k) + u_I(k), u_I(k) = u_I(k-1) + C_I e(k), e = target - Th.
C_P and C_I are placed by poles (Eq. 9-13): with the closed loop's characteristic polynomial
z^2 + ((C_P + C_I) b - (1 + a)) z + a - C_P b = (z - p1)(z - p2) and p1,2 = r e^(±jθ),

    C_P = (a - r^2) / b,   C_I = (1 + a - 2 r cos θ) / b - C_P,

where the settling time S_t (epochs, to within c % of the step) gives r = (c/100)^(1/S_t) and the
maximum overshoot M_o gives θ = π ln r / ln M_o. The paper prints M_o = r^(1/|θ|); its reference [5]
(Hellerstein et al., Feedback Control of Computing Systems, §5) has r^(π/|θ|), which is what the
overshoot of a pair of poles at angle θ is (the first peak comes after π/θ epochs), so π is used here.
Gains are placed again only where the fitted model has b away from 0 and the placed poles are inside
the unit circle; elsewhere a VM keeps the gains it had. M_o shapes the pole pair only: the controller's
zero at C_P / (C_P + C_I) makes a step's first epoch overshoot more (at the defaults, on the ideal plant,
the first epoch is 1.56 x the step; it is within 10 % from the 3rd epoch and within 2 % from the 6th).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

MIN_GAIN = 1e-3  # |b| below this is no usable model: the VM's throughput does not follow its limit
# What the paper leaves open about the fit: an epoch enters it only if the limit moved by at least
# EXCITATION of the throughput, and a fitted model is taken only if it is plausible for a VM that follows
# its limit (ideally a = b = 1); otherwise the VM keeps the model it had.
EXCITATION = 0.01
A_RANGE = (0.0, 2.0)
B_RANGE = (0.1, 10.0)


def pole_radius_angle(settling_epochs: float, overshoot: float, criterion: float) -> tuple[float, float]:
    """(r, θ) of the dominant pole pair for a settling time (epochs), a maximum overshoot (a fraction,
    0.1 = 10 %) and a convergence criterion c (per cent)."""
    if not settling_epochs > 0:
        raise ValueError(f"PI controller: settling time must be > 0 epochs, got {settling_epochs}")
    if not 0 < overshoot < 1:
        raise ValueError(f"PI controller: maximum overshoot must be in (0, 1), got {overshoot}")
    if not 0 < criterion < 100:
        raise ValueError(f"PI controller: convergence criterion must be in (0, 100) per cent, got {criterion}")
    r = (criterion / 100.0) ** (1.0 / settling_epochs)
    theta = min(math.pi * math.log(r) / math.log(overshoot), math.pi)
    return r, theta


def place_gains(a: np.ndarray, b: np.ndarray, r: float, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """(C_P, C_I) that put the closed loop's poles at r e^(±jθ) for the plant Th(k+1) = a Th(k) + b u(k)."""
    cp = (a - r * r) / b
    ci = (1.0 + a - 2.0 * r * math.cos(theta)) / b - cp
    return cp, ci


def closed_loop_poles(a: float, b: float, cp: float, ci: float) -> np.ndarray:
    """The roots of Eq. 13, the closed loop's characteristic polynomial."""
    return np.roots([1.0, (cp + ci) * b - (1.0 + a), a - cp * b])


@dataclass
class PiState:
    """Per VM: the fitted model, the gains, the integral term, and the least-squares sums."""

    a: np.ndarray
    b: np.ndarray
    cp: np.ndarray
    ci: np.ndarray
    integral: np.ndarray
    last_throughput: np.ndarray  # Th(k-1), NaN before the first epoch
    last_input: np.ndarray  # u(k-1)
    sums: np.ndarray = field(repr=False)  # (5, n): Σ x1², Σ x1 x2, Σ x2², Σ x1 y, Σ x2 y (x1 = Th, x2 = u)

    @classmethod
    def fresh(cls, n: int, r: float, theta: float) -> PiState:
        one = np.ones(n)
        cp, ci = place_gains(one, one, r, theta)
        nan = np.full(n, np.nan)
        return cls(one.copy(), one.copy(), cp, ci, np.zeros(n), nan, np.zeros(n), np.zeros((5, n)))


@dataclass(frozen=True)
class PiDesign:
    """What the gains are placed for: the paper's defaults are 5 epochs, 10 % overshoot and c = 2 %."""

    settling_epochs: float = 5.0
    overshoot: float = 0.1
    criterion: float = 2.0
    forgetting: float = 0.95  # weight of the older epochs in the least-squares fit, per epoch

    def poles(self) -> tuple[float, float]:
        return pole_radius_angle(self.settling_epochs, self.overshoot, self.criterion)


def fit_arma(state: PiState, throughput: np.ndarray, forgetting: float, active: np.ndarray | bool = True) -> None:
    """Add the epoch (Th(k-1), u(k-1)) -> Th(k) to each VM's least-squares sums and solve for a and b
    where the 2x2 normal equations are well conditioned; elsewhere a and b stay as they were. Epochs where
    the limit did not hold the VM back (not `active`) say nothing of how it follows its limit: skipped."""
    # an epoch whose limit hardly moved says nothing of b (no excitation): the fit would diverge on noise
    moved = np.abs(state.last_input) >= EXCITATION * np.abs(np.nan_to_num(state.last_throughput))
    seen = ~np.isnan(state.last_throughput) & ~np.isnan(throughput) & active & moved
    x1 = np.where(seen, state.last_throughput, 0.0)
    x2 = np.where(seen, state.last_input, 0.0)
    y = np.where(seen, throughput, 0.0)
    if not seen.any():
        return  # nothing learnt this epoch (a VM the limit does not hold back, or one whose limit held)
    sums = state.sums
    sums *= np.where(seen, forgetting, 1.0)
    for row, term in enumerate((x1 * x1, x1 * x2, x2 * x2, x1 * y, x2 * y)):
        sums[row] += term
    s11, s12, s22, s1y, s2y = sums
    det = s11 * s22 - s12 * s12
    solvable = seen & (det > 1e-9 * np.maximum(s11 * s22, 1e-300))
    with np.errstate(invalid="ignore", divide="ignore"):
        a = (s22 * s1y - s12 * s2y) / det
        b = (s11 * s2y - s12 * s1y) / det
    plausible = solvable & (a >= A_RANGE[0]) & (a <= A_RANGE[1]) & (b >= B_RANGE[0]) & (b <= B_RANGE[1])
    state.a = np.where(plausible, a, state.a)
    state.b = np.where(plausible, b, state.b)


def step(
    state: PiState, throughput: np.ndarray, target: np.ndarray, design: PiDesign, active: np.ndarray | bool = True
) -> np.ndarray:
    """One epoch for every VM: learn the model from the epoch just measured, place the gains where the
    model allows, and return u(k), the change to make to each VM's IO rate limit (IOPS).

    `active`: per VM, whether its limit is what held it back in the epoch. Where it was not (the device
    or the workload did), raising the limit does nothing: the integral holds and the VM gets no more
    limit (anti-windup; a lower target may still lower it)."""
    fit_arma(state, throughput, design.forgetting, active)
    r, theta = design.poles()
    usable = np.abs(state.b) >= MIN_GAIN
    with np.errstate(invalid="ignore", divide="ignore"):
        cp, ci = place_gains(state.a, np.where(usable, state.b, 1.0), r, theta)
    ok = usable & np.isfinite(cp) & np.isfinite(ci) & (r < 1.0)
    state.cp = np.where(ok, cp, state.cp)
    state.ci = np.where(ok, ci, state.ci)
    error = np.where(np.isnan(throughput), 0.0, target - throughput)  # no measurement: hold
    stuck = ~np.asarray(active) & (error > 0)  # wants more than a limit can give it
    state.integral = np.where(stuck, state.integral, state.integral + state.ci * error)
    control = np.where(stuck, 0.0, state.cp * error + state.integral)
    state.last_throughput = throughput.astype(float, copy=True)
    state.last_input = control
    return control
