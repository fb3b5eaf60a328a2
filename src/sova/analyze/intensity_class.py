"""The intensity class of each VM that may hold a VF, by the Sova paper's heaps or the SR-IOV paper's threshold.

Two classifiers, over the samples of the last ``window`` seconds:
- ``heaps`` (Sova Algorithm 1, lines 10-28, Raccoon): the q VMs of a host with the largest IF form its
  I/O heap (q between p and the number of its VMs; 0 means 2p); they are I/O-intensive and compete by NF.
- ``threshold`` (SR-IOV paper §4.6): VMs whose io_degree exceeds ``io_threshold`` are I/O-intensive and
  compete by net_degree.
p is the VFs a host hands out (the ``p`` setting, at most its NIC's VFs). Only VMs with traffic (a sample
of at least ``min_packets`` packets) compete. VMs that are migrating, or whose VF is being plugged or
unplugged, are not classified: they can take no VF now and take no place in a heap. Each finding also
carries the VM's bandwidth demand over the window and in its busiest second, which the rate tiers follow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sova.analyze.base import Analyzer, register
from sova.analyze.findings import IntensityClass
from sova.analyze.intensity import io_degree, io_factor, net_degree, network_factor, traffic_samples
from sova.analyze.samples import Samples, window_samples
from sova.model.knowledge import Knowledge
from sova.model.snapshot import Snapshot


@dataclass(frozen=True)
class IntensityScores:
    """Per VM of a snapshot: network score (NF or net_degree), I/O score (IF or io_degree), whether it is
    I/O-intensive, whether it competes for a VF (I/O-intensive with network traffic), and its demand (bit/s,
    mean over the window and in the busiest second)."""

    net: np.ndarray
    io: np.ndarray
    io_intensive: np.ndarray
    candidate: np.ndarray
    demand: np.ndarray
    peak: np.ndarray


def vf_eligible(snap: Snapshot, exclude: frozenset[str] | set[str] = frozenset()) -> np.ndarray:
    """Per VM: not migrating, on its vNIC or holding a VF (no hot-plug under way), and not in `exclude`."""
    eligible = ~snap.vm_migrating & np.isin(np.array(snap.vm_nic), ("vnic", "vf"))
    if exclude:
        eligible &= ~np.isin(np.array(snap.vms), list(exclude))
    return eligible


def classify(s: Samples, snap: Snapshot, p: Mapping[str, Any], eligible: np.ndarray) -> IntensityScores:
    """The scores of every VM, heap membership taken per host among the eligible VMs, vectorized."""
    active = traffic_samples(s, p["min_packets"]).any(axis=0)
    demand = s.data.sum(axis=0) * 8 / max(s.seconds.sum(), 1e-9)
    peak = (s.data * 8 / s.seconds[:, None]).max(axis=0)
    if p["classifier"] == "threshold":
        io, net = io_degree(s), net_degree(s, p["eps_degree"], p["min_packets"])
        io_intensive = eligible & (io > p["io_threshold"])
        return IntensityScores(net, io, io_intensive, io_intensive & active, demand, peak)
    io, net = io_factor(s), network_factor(s, p["eps"], p["min_packets"])
    slots = np.minimum(p["p"], snap.vfs_total).astype(np.int64)
    host = np.where(eligible, snap.vm_host, len(snap.hosts))  # ineligible VMs rank in a host of their own
    order = np.lexsort((-io, host))
    first = np.searchsorted(host[order], host[order])
    rank = np.empty(len(io), dtype=np.int64)
    rank[order] = np.arange(len(io)) - first
    n_on = np.bincount(host, minlength=len(snap.hosts) + 1)[: len(snap.hosts)]
    q = np.minimum(np.maximum(p["q"] or 2 * slots, slots), n_on)
    in_heap = eligible & (rank < np.append(q, 0)[host])
    return IntensityScores(net, io, in_heap, in_heap & active, demand, peak)


def scores_of(classes: tuple[IntensityClass, ...], snap: Snapshot) -> IntensityScores:
    """The scores the findings carry, as arrays indexed like the snapshot's VMs (zero for unclassified VMs)."""
    at = np.array([snap.vm_position[c.vm] for c in classes], dtype=np.int64)

    def column(values: list, dtype=float) -> np.ndarray:
        out = np.zeros(len(snap.vms), dtype=dtype)
        out[at] = values
        return out

    return IntensityScores(
        net=column([c.net for c in classes]),
        io=column([c.io for c in classes]),
        io_intensive=column([c.category != "cpu" for c in classes], bool),
        candidate=column([c.category == "network" for c in classes], bool),
        demand=column([c.demand for c in classes]),
        peak=column([c.peak for c in classes]),
    )


@register
class Intensity(Analyzer):
    name = "intensity"
    summary = "each VM's IF/NF (heaps) or io_degree/net_degree (threshold) and its intensity class"
    reads = ("window", "classifier", "eps", "eps_degree", "q", "p", "io_threshold", "min_packets")

    def analyze(self, knowledge: Knowledge, settings: Mapping[str, Any]) -> tuple[IntensityClass, ...]:
        s = window_samples(knowledge, settings["window"])
        if s is None:
            return ()
        snap = knowledge.latest
        eligible = vf_eligible(snap)
        scores = classify(s, snap, settings, eligible)
        category = np.where(scores.candidate, "network", np.where(scores.io_intensive, "io", "cpu"))
        measures = "io_degree/net_degree" if settings["classifier"] == "threshold" else "IF/NF"
        v = np.flatnonzero(eligible)
        return tuple(
            IntensityClass(snap.vms[i], snap.hosts[h], c, measures, io, net, demand, peak)
            for i, h, c, io, net, demand, peak in zip(
                v.tolist(),
                snap.vm_host[v].tolist(),
                category[v].tolist(),
                scores.io[v].tolist(),
                scores.net[v].tolist(),
                scores.demand[v].tolist(),
                scores.peak[v].tolist(),
                strict=True,
            )
        )
