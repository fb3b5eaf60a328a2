"""Which VM leaves an overloaded host (Beloglazov and Buyya, CCPE 24(13), 2012, §6.4): one VM at a time,
by one of four criteria, until the host is no longer overloaded.

- MMT, minimum migration time: the smallest memory over the bandwidth it would move over.
- MU, minimum utilisation: the least CPU used now (its share of the VM's own capacity).
- RS, random selection: uniform, from the policy's seeded generator.
- MC, maximum correlation: the VM whose CPU history the others' histories explain best: the largest
  R^2 of a least-squares fit (with intercept) of its history on theirs. With fewer samples than VMs
  the fit is underdetermined, and MMT chooses instead (as CloudSim's implementation of the paper does).

Each function takes the candidates' arrays (index i: candidate i) and returns the chosen index.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

CRITERIA = ("mmt", "mu", "rs", "mc")


def minimum_migration_time(memory: np.ndarray, bandwidth: np.ndarray) -> int:
    """The VM whose memory moves fastest (ties: the first)."""
    return int(np.argmin(memory / bandwidth))


def minimum_utilisation(utilisation: np.ndarray) -> int:
    return int(np.argmin(utilisation))


def random_selection(count: int, rng: np.random.Generator) -> int:
    return int(rng.integers(count))


def correlation_r2(history: np.ndarray) -> np.ndarray | None:
    """Each row's R^2 regressed (with intercept) on the other rows (rows: VMs, columns: samples); None when
    there are fewer samples than VMs (or a single VM): the fits are underdetermined."""
    vms, samples = history.shape
    if vms < 2 or samples < vms:
        return None
    r2 = np.empty(vms)
    for i in range(vms):
        y = history[i]
        design = np.column_stack([np.ones(samples), np.delete(history, i, axis=0).T])
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        residual = ((y - design @ coef) ** 2).sum()
        total = ((y - y.mean()) ** 2).sum()
        r2[i] = 1.0 - residual / total if total > 0 else 0.0
    return r2


def maximum_correlation(history: np.ndarray, memory: np.ndarray, bandwidth: np.ndarray) -> int:
    r2 = correlation_r2(history)
    return minimum_migration_time(memory, bandwidth) if r2 is None else int(np.argmax(r2))


def select_until_relieved(
    candidates: list[int], choose: Callable[[list[int]], int], still_overloaded: Callable[[list[int]], bool]
) -> list[int]:
    """The VMs to move off a host: `choose` picks one among those left (an index into its list), until
    `still_overloaded(the VMs chosen so far)` is false or none is left."""
    left, chosen = list(candidates), []
    while left and still_overloaded(chosen):
        chosen.append(left.pop(choose(left)))
    return chosen
