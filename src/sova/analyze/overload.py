"""Host overload detection of Beloglazov and Buyya (CCPE 24(13), 2012, §6.1-6.3), as pure functions over
each host's CPU utilisation history (hosts x samples, oldest first, 0-1 and above for demand beyond the
host), vectorized over hosts.

- THR: overloaded when the utilisation now exceeds a static threshold.
- IQR, MAD: adaptive thresholds 1 - s * IQR and 1 - s * MAD of the history (s: the safety parameter);
  MAD = median(|u - median(u)|), with no normal-consistency factor, as the paper defines it.
- LR, LRR: a local linear fit of the last `window` samples, weighted by the tricube of each sample's
  distance from the newest (Cleveland's loess; LRR adds one round of bisquare robustness weights);
  overloaded when s times the utilisation it predicts `ahead` samples later reaches 1. With the fit
  ``ols``, CloudSim 3.0.3's: an ordinary least-squares line over the same samples, LRR the same as LR
  (commons-math applies its weights only when 40 % of them are at most 0, which tricube and bisquare
  weights never are: docs/cloudsim-reference.md §1.4).

A host with too short a history is judged by THR at FALLBACK_THRESHOLD, as CloudSim's implementation of
the paper does (fewer than 12 samples for IQR and MAD, fewer than `window` for LR and LRR).

The ``overload`` analyzer applies them to each host's CPU asked per period (``analyze.cpu_asked``) and
gives one ``Overload`` finding per host, which ``power-aware`` plans from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sova.analyze.base import Analyzer, register
from sova.analyze.cpu_asked import CpuAsked, core_speed, cpu_asked
from sova.analyze.findings import Finding, HostColumns
from sova.model.knowledge import Knowledge
from sova.model.snapshot import Snapshot

FALLBACK_THRESHOLD = 0.7
MIN_HISTORY = 12  # samples IQR and MAD need
FITS = ("weighted", "ols")  # the paper's local fit, CloudSim 3.0.3's ordinary least squares
QUARTILES = ("linear", "rank")  # interpolated (numpy), or CloudSim 3.0.3's ranks round(p (n + 1))


@dataclass(frozen=True)
class Estimators:
    """How the detectors read a history: the paper's estimators (the defaults) or CloudSim 3.0.3's code
    (docs/cloudsim-reference.md §1): LR's line and IQR's quartiles."""

    fit: str = "weighted"
    quartiles: str = "linear"


PAPER = Estimators()


def thr(now: np.ndarray, threshold: float) -> np.ndarray:
    """Overloaded hosts by a static threshold on the utilisation now."""
    return now > threshold


def iqr_threshold(history: np.ndarray, safety: float, quartiles: str = "linear") -> np.ndarray:
    """1 - s * (Q3 - Q1) of each host's history (rows). Quartiles interpolated, or by
    CloudSim's ranks: the round(p (n + 1))-th smallest of n."""
    if quartiles == "linear":
        q1, q3 = np.percentile(history, [25, 75], axis=1)
        return 1.0 - safety * (q3 - q1)
    ordered = np.sort(history, axis=1)
    length = history.shape[1]

    def rank(share: float) -> int:
        return min(max(int(np.floor(share * (length + 1) + 0.5)) - 1, 0), length - 1)

    return 1.0 - safety * (ordered[:, rank(0.75)] - ordered[:, rank(0.25)])


def mad_threshold(history: np.ndarray, safety: float) -> np.ndarray:
    """1 - s * MAD of each host's history (rows)."""
    median = np.median(history, axis=1, keepdims=True)
    return 1.0 - safety * np.median(np.abs(history - median), axis=1)


def adaptive(history: np.ndarray, safety: float, method: str, quartiles: str = "linear") -> np.ndarray:
    """Overloaded hosts by IQR or MAD: the newest sample above the history's threshold (THR at the fallback
    threshold for a history shorter than MIN_HISTORY)."""
    now = history[:, -1]
    if history.shape[1] < MIN_HISTORY:
        return thr(now, FALLBACK_THRESHOLD)
    threshold = iqr_threshold(history, safety, quartiles) if method == "iqr" else mad_threshold(history, safety)
    return now > threshold


def tricube_weights(window: int) -> np.ndarray:
    """Loess weights of samples 0..window-1 (the newest last) for a fit at the newest: (1 - d^3)^3, d the
    distance from the newest over the window's span, so the oldest sample weighs 0."""
    distance = (window - 1 - np.arange(window)) / (window - 1)
    return (1.0 - distance**3) ** 3


def local_fit(
    history: np.ndarray, window: int = 10, robust: bool = False, fit: str = "weighted"
) -> tuple[np.ndarray, np.ndarray]:
    """(intercept, slope) of each host's linear fit over its last `window` samples, x = 1..window: tricube
    weighted (bisquare too if robust), or with ``fit="ols"`` unweighted whether robust or not."""
    y = history[:, -window:]
    x = np.arange(1, window + 1, dtype=float)
    if fit == "ols":
        return _weighted_line(x, y, np.ones_like(y))
    weights = np.broadcast_to(tricube_weights(window), y.shape)
    intercept, slope = _weighted_line(x, y, weights)
    if robust:  # one round of bisquare weights on the residuals (LRR)
        residual = y - (intercept[:, None] + slope[:, None] * x)
        scale = 6.0 * np.median(np.abs(residual), axis=1, keepdims=True)
        ratio = np.divide(residual, scale, out=np.zeros_like(residual), where=scale > 0)
        bisquare = np.where(np.abs(ratio) < 1, (1 - ratio**2) ** 2, 0.0)
        intercept, slope = _weighted_line(x, y, weights * bisquare)
    return intercept, slope


def _weighted_line(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted least squares of y (rows) on x: the closed form of the 2 x 2 normal equations."""
    total = weights.sum(axis=1)
    x_mean = (weights * x).sum(axis=1) / total
    y_mean = (weights * y).sum(axis=1) / total
    dx = x - x_mean[:, None]
    spread = (weights * dx**2).sum(axis=1)
    slope = np.divide(
        (weights * dx * (y - y_mean[:, None])).sum(axis=1), spread, out=np.zeros_like(spread), where=spread > 0
    )
    return y_mean - slope * x_mean, slope


def regression(
    history: np.ndarray, safety: float, window: int = 10, ahead: int = 1, robust: bool = False, fit: str = "weighted"
) -> np.ndarray:
    """Overloaded hosts by LR (or LRR): s times the utilisation predicted `ahead` samples past the newest
    reaches 1 (THR at the fallback threshold for a history shorter than `window`)."""
    if history.shape[1] < window:
        return thr(history[:, -1], FALLBACK_THRESHOLD)
    intercept, slope = local_fit(history, window, robust, fit)
    return safety * (intercept + slope * (window + ahead)) >= 1.0


def limits(
    history: np.ndarray, detector: str, threshold: float, safety: float, estimators: Estimators = PAPER
) -> np.ndarray:
    """Per host, the utilisation its detector tolerates after a move (PABFD's check): THR's threshold,
    IQR's or MAD's threshold from its history, 1/s for LR and LRR; the fallback while the history is short."""
    if detector == "thr":
        return np.full(len(history), threshold)
    if detector in ("iqr", "mad") and history.shape[1] >= MIN_HISTORY:
        if detector == "iqr":
            return iqr_threshold(history, safety, estimators.quartiles)
        return mad_threshold(history, safety)
    if detector in ("lr", "lrr") and history.shape[1] >= 10:
        return np.full(len(history), 1.0 / max(safety, 1e-12))
    return np.full(len(history), FALLBACK_THRESHOLD)


def overloaded(
    history: np.ndarray, detector: str, threshold: float, safety: float, estimators: Estimators = PAPER
) -> np.ndarray:
    """Overloaded hosts by the named detector (thr, iqr, mad, lr or lrr), reading the history as
    `estimators` say."""
    if detector == "thr":
        return thr(history[:, -1], threshold)
    if detector in ("iqr", "mad"):
        return adaptive(history, safety, detector, estimators.quartiles)
    return regression(history, safety, robust=detector == "lrr", fit=estimators.fit)


@dataclass(frozen=True)
class Overload(Finding, kind="overload"):
    """Whether a host is overloaded by Beloglazov and Buyya's detector, with the evidence: its utilisation
    in the last period and the utilisation the detector tolerates after a move."""

    host: str
    overloaded: bool
    detector: str  # thr, iqr, mad, lr or lrr
    utilisation: float  # CPU asked by its VMs in the last period over its capacity
    limit: float  # the utilisation a VM moved onto it may bring it to
    samples: int  # periods of history judged

    @property
    def notable(self) -> bool:
        return self.overloaded

    def describe(self) -> str:
        verdict = "overloaded" if self.overloaded else "not overloaded"
        return (
            f"{self.host} {verdict} by {self.detector.upper()} on {self.samples} periods: {self.utilisation:.0%} "
            f"asked, {self.limit:.0%} tolerated after a move"
        )


@register
class HostOverload(Analyzer):
    name = "overload"
    summary = "Beloglazov-Buyya overload detection (THR, IQR, MAD, LR, LRR) over each host's CPU asked per period"
    reads = ("period", "detector", "threshold", "safety", "history", "fit", "quartiles")

    def span(self, settings: Mapping[str, Any]) -> float:
        return settings["period"] * settings["history"]

    def analyze(self, knowledge: Knowledge, settings: Mapping[str, Any]) -> Sequence[Overload]:
        if len(knowledge) < 2:
            return ()
        found = cpu_asked(knowledge, settings["period"], settings["history"])
        if found is None:
            return ()
        snap = knowledge.latest
        history = host_history(snap, found)
        detector, threshold, safety = settings["detector"], settings["threshold"], settings["safety"]
        estimators = estimators_of(settings)
        hot = overloaded(history, detector, threshold, safety, estimators) & (
            np.bincount(snap.vm_host, minlength=len(snap.hosts)) > 0
        )
        tolerated = limits(history, detector, threshold, safety, estimators)
        hosts = len(snap.hosts)
        columns = {
            "host": list(snap.hosts),
            "overloaded": hot.tolist(),
            "detector": [detector] * hosts,
            "utilisation": history[:, -1].tolist(),
            "limit": tolerated.tolist(),
            "samples": [history.shape[1]] * hosts,
        }
        return HostColumns(Overload, columns)  # a finding per host every round: objects only if read


def estimators_of(settings: Mapping[str, Any]) -> Estimators:
    """The estimators the settings name (power-aware's fit and quartiles)."""
    return Estimators(settings["fit"], settings["quartiles"])


def vm_histories(asked: CpuAsked) -> np.ndarray:
    """VMs x samples (newest last) of CPU asked, as long as the longest VM history."""
    return asked.history[:, -max(int(asked.samples.max(initial=0)), 1) :]


def summed_by_host(vm_host: np.ndarray, vm_history: np.ndarray, hosts: int) -> np.ndarray:
    """Hosts x samples: the sum of each host's VMs' histories (VMs x samples)."""
    return np.stack([np.bincount(vm_host, weights=column, minlength=hosts) for column in vm_history.T], axis=1)


def host_history(snap: Snapshot, asked: CpuAsked) -> np.ndarray:
    """Hosts x samples (newest last) of utilisation: the sum of each host's VMs' histories over its
    capacity, as long as the longest VM history."""
    summed = summed_by_host(snap.vm_host, vm_histories(asked), len(snap.hosts))
    return summed / (snap.host_cores * core_speed(snap))[:, None]
