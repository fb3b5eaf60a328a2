"""k-out-of-n threshold detection over consecutive observations (``analyze.load.host_loads``).

A resource is hot when at least k of the last n observations exceed the threshold (Sandpiper's rule;
the Sova and vlm policies add an AR(1) forecast on top).
"""

from __future__ import annotations

import numpy as np


def k_of_n_hot(observations: np.ndarray, threshold: float, k: int) -> np.ndarray:
    """Per column: whether at least k observations exceed the threshold."""
    return (observations > threshold).sum(axis=0) >= k
