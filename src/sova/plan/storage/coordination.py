"""SASLO's optimizer (AOT) for the VMs of one storage server: Algorithm 1 (throughput SLO coordination,
every T_R = 30 s, step Δ_R = 10 % of each VM's range) and Algorithm 2 (IO size limit coordination, every
T_S = 5 min, step Δ_S = 4 KB). Both are one rule applied to a different setting, so one function does
both, vectorized over the VMs:

- if some VM misses its QoS (SC rate below its lower bound, or PF ratio above its upper bound), every VM
  whose setting is at least one step above its lower bound steps down;
- if every VM exceeds its QoS (SC rate above its upper bound and PF ratio below its lower bound), every VM
  whose setting is at least one step below its upper bound steps up;
- if some VM misses its QoS and no VM can step down, a warning: the targets and constraints cannot all be
  met on this server (the paper: storage migration may then be triggered).

A VM with no SC rate or PF ratio yet (NaN) neither misses nor exceeds its QoS: nothing steps up until
every VM has been measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Coordination:
    """The outcome of one round: each VM's setting, which way it moved (-1, 0, +1), and the warning."""

    setting: np.ndarray
    moved: np.ndarray
    warning: bool


def coordinate(
    setting: np.ndarray,
    lowest: np.ndarray,
    highest: np.ndarray,
    step: np.ndarray,
    sc: np.ndarray,
    sc_range: tuple[np.ndarray, np.ndarray],
    pf: np.ndarray,
    pf_range: tuple[np.ndarray, np.ndarray],
) -> Coordination:
    """One round of Algorithm 1 or 2 over the VMs of one storage server (arrays, one entry per VM)."""
    setting = np.asarray(setting, dtype=float)
    sc_low, sc_high = sc_range
    pf_low, pf_high = pf_range
    missing = (sc < sc_low) | (pf > pf_high)  # NaN compares False: an unmeasured VM misses nothing
    exceeding = (sc > sc_high) & (pf < pf_low)
    movable = step > 0
    can_down = movable & (setting >= lowest + step)
    can_up = movable & (setting <= highest - step)
    moved = np.zeros(len(setting), dtype=np.int64)
    if missing.any() and can_down.any():
        moved[can_down] = -1
    elif len(setting) and exceeding.all() and can_up.any():
        moved[can_up] = 1
    warning = bool(missing.any() and not can_down.any())
    return Coordination(setting + moved * step, moved, warning)


def throughput_step(lowest: np.ndarray, highest: np.ndarray, share: float = 0.1) -> np.ndarray:
    """Δ_R: `share` of each VM's throughput SLO range (10 % by default)."""
    return share * (np.asarray(highest, dtype=float) - np.asarray(lowest, dtype=float))
