"""AR(1) forecast of the next observation (Sova paper Eq. 6, Sandpiper's predictor).

    x_hat(p+1) = mu + phi * (x_p - mu) + delta

mu is the mean of the series and phi its lag-1 autocorrelation, estimated from the series itself
(clipped to [-1, 1]; 0 when the series is constant). delta is the white Gaussian noise of the model:
its mean is 0, so the expected forecast uses delta = 0; a caller that wants the paper's randomised
forecast passes a generator, and delta is drawn with the standard deviation of the AR(1) residuals.
"""

from __future__ import annotations

import numpy as np


def ar1_parameters(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mu, phi, residual std) per column of x (observations x series)."""
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=0)
    d = x - mu
    var = (d**2).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        phi = np.where(var > 0, (d[1:] * d[:-1]).sum(axis=0) / var, 0.0)
    phi = np.clip(phi, -1.0, 1.0)
    resid = d[1:] - phi * d[:-1]
    sigma = resid.std(axis=0) if len(x) > 1 else np.zeros_like(mu)
    return mu, phi, sigma


def ar1_forecast(x: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """Forecast of the next value of each column of x (observations x series)."""
    mu, phi, sigma = ar1_parameters(x)
    delta = rng.normal(0.0, 1.0, size=mu.shape) * sigma if rng is not None else 0.0
    return mu + phi * (np.asarray(x, dtype=float)[-1] - mu) + delta
