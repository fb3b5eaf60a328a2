"""Host power models: watts as a function of CPU utilisation.

A host's curve is its power at 0, 10, ..., 100 % CPU (11 points), interpolated linearly in between, as
SPECpower_ssj2008 reports servers. ``linear`` is the two-point model from idle to full power; the named
tables are published SPECpower results of the servers CloudSim's power-aware consolidation study uses
(Beloglazov & Buyya, CCPE 24(13), 2012, Table 1; CloudSim's PowerModelSpecPowerHpProLiantMl110G4Xeon3040
and ...G5Xeon3075): the HP ProLiant ML110 G4 (Xeon 3040, 2 x 1,860 MIPS) and G5 (Xeon 3075, 2 x 2,660);
and the IBM System x3550 M3 with two Xeon X5670 (12 x 2,933 MHz; CloudSim's
PowerModelSpecPowerIbmX3550XeonX5670), the Xeon generation the Bitbrains VMs ran on (2,926 MHz per core).
"""

from __future__ import annotations

import itertools

import numpy as np

SPEC_POWER: dict[str, tuple[float, ...]] = {  # watts at 0, 10, ..., 100 % CPU
    "hp-ml110-g4": (86.0, 89.4, 92.6, 96.0, 99.5, 102.0, 106.0, 108.0, 112.0, 114.0, 117.0),
    "hp-ml110-g5": (93.7, 97.0, 101.0, 105.0, 110.0, 116.0, 121.0, 125.0, 129.0, 133.0, 135.0),
    "ibm-x3550-x5670": (66.0, 107.0, 120.0, 131.0, 143.0, 156.0, 173.0, 191.0, 211.0, 229.0, 247.0),
}
MODELS = ("linear", *SPEC_POWER, "custom")
POINTS = 11  # 0 %, 10 %, ..., 100 %


def host_curve(model: str, idle: float, peak: float, custom: tuple[float, ...] = ()) -> np.ndarray:
    """A host's 11-point curve: from its idle and full power (linear), a named table, or its own."""
    if model == "linear":
        return idle + (peak - idle) * np.linspace(0.0, 1.0, POINTS)
    if model == "custom":
        return np.array(custom, dtype=float)
    return np.array(SPEC_POWER[model], dtype=float)


def power_at(curves: np.ndarray, util: np.ndarray) -> np.ndarray:
    """Each host's power (W) at its utilisation (clipped to 0-1): `curves` is (hosts, 11), `util` (hosts,)."""
    position = np.clip(util, 0.0, 1.0) * (POINTS - 1)
    low = np.minimum(position.astype(np.int64), POINTS - 2)
    rows = np.arange(len(curves))
    below, above = curves[rows, low], curves[rows, low + 1]
    return below + (above - below) * (position - low)


def curve_problem(values: object) -> str | None:
    """What is wrong with a custom curve, or None: 11 finite watts >= 0 that never fall."""
    if not isinstance(values, list | tuple) or len(values) != POINTS:
        return f"expected {POINTS} numbers (watts at 0, 10, ..., 100 % CPU), got {values!r}"
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and np.isfinite(v) and v >= 0 for v in values):
        return f"expected finite numbers of watts >= 0, got {values!r}"
    if any(b < a for a, b in itertools.pairwise(values)):
        return "power must not fall as the utilisation rises"
    return None
