"""How a storage device's service varies from one epoch to the next.

- Capacity over time: each server's speed is scaled by a factor f(t), a mean-one log-normal AR(1)
  process. Its coefficient of variation is the server's ``variability``, and its correlation time is
  ``variability_time``: log f follows x(k) = φ x(k-1) + sqrt(1 - φ²) σ ε with φ = exp(-epoch / T) and
  σ² = ln(1 + variability²). Devices do this as background work, caches and garbage collection come
  and go (mClock, §1, reports capacity swings on shared arrays). The default variability is 0.
- Completions within an epoch: a device busy for an epoch completes requests as a renewal process. If a
  request's service time has coefficient of variation cv, the count has mean n and standard deviation
  about cv √n. It is drawn as n times a mean-one gamma multiplier of CV cv / √n, which is never
  negative and has exactly the mean.
"""

from __future__ import annotations

import numpy as np


class CapacityProcess:
    """The speed factor of each storage server, advanced one epoch at a time."""

    def __init__(self, variability: np.ndarray, correlation_time: np.ndarray, rng: np.random.Generator):
        self.sigma = np.sqrt(np.log1p(np.asarray(variability, dtype=float) ** 2))
        self.correlation_time = np.asarray(correlation_time, dtype=float)
        self.rng = rng
        self.active = bool((self.sigma > 0).any())
        self.nominal = np.ones(len(self.sigma))
        # start from the stationary distribution, so a run has no warm-up
        self.log_factor = (
            self.sigma * rng.standard_normal(len(self.sigma)) if self.active else np.zeros(len(self.sigma))
        )

    def advance(self, epoch: float) -> np.ndarray:
        """The factor for the coming epoch (1: nominal speed; 1.2: 20 % faster)."""
        if not self.active:
            return self.nominal
        phi = np.exp(-epoch / np.maximum(self.correlation_time, 1e-12))
        noise = self.rng.standard_normal(len(self.sigma))
        self.log_factor = phi * self.log_factor + np.sqrt(1.0 - phi * phi) * self.sigma * noise
        return np.exp(self.log_factor - self.sigma**2 / 2)


def completions(rate: np.ndarray, epoch: float, cv: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The rate each stream's requests actually complete at over one epoch, around its mean `rate`."""
    expected = rate * epoch
    noisy = (expected > 0) & (cv > 0)
    if not noisy.any():
        return rate
    shape = expected[noisy] / cv[noisy] ** 2  # gamma(k, 1/k): mean 1, CV 1/sqrt(k) = cv / sqrt(n)
    out = rate.astype(float, copy=True)
    out[noisy] *= rng.gamma(shape, 1.0 / shape)
    return out
