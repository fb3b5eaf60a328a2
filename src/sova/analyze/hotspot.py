"""Hotspots: k-out-of-n threshold detection over a host's last n reports (``analyze.load.host_loads``).

A host is hot when at least k of its last n reports exceed the threshold (Sandpiper's rule), and, in the
rules that forecast, when the AR(1) forecast of the next report does too. Three rules, one analyzer each:
- ``hotspot`` (Sova Algorithm 2, lines 4-6): a host's load in a report is its largest utilisation of CPU,
  NIC and memory;
- ``resource-hotspot`` (Sandpiper): each resource on its own; the host is hot when one of them is;
- ``cpu-hotspot``: CPU alone, without a forecast (the ``threshold-migration`` baseline).
The first two count only reports taken since the host's VMs last changed (``Knowledge.placement``): the
round after a migration must not act on reports of the host as it was before. Each analyzer gives one
``Hotspot`` per host of the latest snapshot, in its order, or none while the history is shorter than n
reports.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sova.analyze.base import Analyzer, register
from sova.analyze.findings import Hotspot
from sova.analyze.forecast import ar1_forecast
from sova.analyze.load import RESOURCES, host_loads
from sova.model.knowledge import Knowledge


@dataclass(frozen=True)
class HostEvidence:
    """Per host, what a rule judged: which resource, its load in the last report, the reports above the
    threshold among those that count, its forecast (None: the rule has none), and the verdict."""

    resource: np.ndarray  # index into RESOURCES
    load: np.ndarray
    above: np.ndarray
    forecast: np.ndarray | None
    hot: np.ndarray


def volume_rule(
    loads: np.ndarray, k: int, threshold: float, valid: np.ndarray | None = None, rng: np.random.Generator | None = None
) -> HostEvidence:
    """Sova's rule on loads (n reports x hosts x resources); valid (n x hosts): the reports that count."""
    volume = loads.max(axis=2)  # n x hosts
    counted = volume if valid is None else np.where(valid, volume, -np.inf)
    above = (counted > threshold).sum(axis=0)
    forecast = ar1_forecast(volume, rng)
    hot = (above >= k) & (forecast > threshold)
    return HostEvidence(loads[-1].argmax(axis=1), volume[-1], above, forecast, hot)


def resource_rule(loads: np.ndarray, k: int, threshold: float, valid: np.ndarray) -> HostEvidence:
    """Sandpiper's rule: each resource judged on its own. The evidence is of the hot resource with the
    largest load, or of a cool host's most loaded resource."""
    above = (np.where(valid[:, :, None], loads, -np.inf) > threshold).sum(axis=0)  # hosts x resources
    forecast = ar1_forecast(loads.reshape(len(loads), -1)).reshape(loads.shape[1:])
    hot = (above >= k) & (forecast > threshold)
    last = loads[-1]
    judged = np.where(hot.any(axis=1), np.where(hot, last, -np.inf).argmax(axis=1), last.argmax(axis=1))

    def pick(per_resource: np.ndarray) -> np.ndarray:
        return np.take_along_axis(per_resource, judged[:, None], axis=1)[:, 0]

    return HostEvidence(judged, pick(last), pick(above), pick(forecast), hot.any(axis=1))


def cpu_rule(loads: np.ndarray, k: int, threshold: float) -> HostEvidence:
    """CPU alone, every report counts, no forecast."""
    cpu = loads[:, :, 0]
    above = (cpu > threshold).sum(axis=0)
    return HostEvidence(np.zeros(cpu.shape[1], dtype=int), cpu[-1], above, None, above >= k)


class _HostHotspots(Analyzer):
    reads = ("interval", "k", "n", "threshold")

    def analyze(self, knowledge: Knowledge, settings: Mapping[str, Any]) -> tuple[Hotspot, ...]:
        loads = host_loads(knowledge, settings["interval"], settings["n"])
        if loads is None:
            return ()
        evidence = self.rule(knowledge, loads, settings)
        forecast = [None] * len(loads[-1]) if evidence.forecast is None else evidence.forecast.tolist()
        k, n, threshold = settings["k"], settings["n"], settings["threshold"]
        return tuple(
            Hotspot(host, hot, RESOURCES[r], load, above, k, n, threshold, f, cpu, nic, mem)
            for host, hot, r, load, above, f, (cpu, nic, mem) in zip(
                knowledge.latest.hosts,
                evidence.hot.tolist(),
                evidence.resource.tolist(),
                evidence.load.tolist(),
                evidence.above.tolist(),
                forecast,
                loads[-1].tolist(),
                strict=True,
            )
        )

    @abstractmethod
    def rule(self, knowledge: Knowledge, loads: np.ndarray, settings: Mapping[str, Any]) -> HostEvidence:
        """Each host's evidence from its last n reports."""


def _since_change(knowledge: Knowledge, settings: Mapping[str, Any]) -> np.ndarray:
    return knowledge.placement.reports_since_change(knowledge.latest, settings["interval"], settings["n"])


@register
class VolumeHotspots(_HostHotspots):
    name = "hotspot"
    summary = "Sova Algorithm 2: the host's largest utilisation above the threshold in k of n reports and forecast"

    def rule(self, knowledge, loads, settings):
        return volume_rule(loads, settings["k"], settings["threshold"], _since_change(knowledge, settings))


@register
class ResourceHotspots(_HostHotspots):
    name = "resource-hotspot"
    summary = "Sandpiper: one resource above the threshold in k of n reports and forecast"

    def rule(self, knowledge, loads, settings):
        return resource_rule(loads, settings["k"], settings["threshold"], _since_change(knowledge, settings))


@register
class CpuHotspots(_HostHotspots):
    name = "cpu-hotspot"
    summary = "CPU above the threshold in k of n reports"

    def rule(self, knowledge, loads, settings):
        return cpu_rule(loads, settings["k"], settings["threshold"])
