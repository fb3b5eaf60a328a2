"""k-out-of-n threshold detection over consecutive observation windows.

An observation is a resource's utilisation averaged over one window; a resource is hot when at least
k of the last n observations exceed the threshold (Sandpiper's rule, without the forecast the Sova
policy adds on top).
"""

from __future__ import annotations

import numpy as np

from sova.model.knowledge import Knowledge


def host_cpu_observations(knowledge: Knowledge, window: float, n: int) -> np.ndarray | None:
    """The last n per-host CPU utilisations, one per window, oldest first (n x hosts)."""
    end = knowledge.latest.time
    obs = []
    for i in range(n):
        u = knowledge.host_cpu_util(window, end - i * window)
        if u is None:
            return None
        obs.append(u)
    return np.array(obs[::-1])


def k_of_n_hot(observations: np.ndarray, threshold: float, k: int) -> np.ndarray:
    """Per column: whether at least k observations exceed the threshold."""
    return (observations > threshold).sum(axis=0) >= k
