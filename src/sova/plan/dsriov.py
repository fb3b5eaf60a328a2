"""Dynamic SR-IOV: each host's VFs go to its most network-intensive VMs (Raccoon / SR-IOV paper).

Runs in the local (per-host) loop every ``period`` on the ``intensity`` findings over the last ``window``
seconds (``analyze.intensity_class``): with the ``heaps`` classifier (Sova Algorithm 1, lines 10-28) a
host's q VMs with the largest IF are I/O-intensive and compete by NF; with ``threshold`` (SR-IOV paper
§4.6) the VMs whose io_degree exceeds ``io_threshold`` are, and compete by net_degree. Only VMs with
traffic compete; the top p of a host get VFs. NF's epsilon defaults to 0.9: the Sova paper gives no
value, its Table 1 NF follows the share of time netperf runs, and with 0.9 the traffic-volume term
refines the ranking without overturning a ten-point difference in that share (the volume of a VF holder
also depends on its rate tier, so a heavier volume weight feeds allocation back into the ranking).
Holders change with hysteresis (``vf_allocation``), VFs carry hierarchical rate tiers, and a swap
happens over two rounds: the unplug frees the VF, the next round plugs it into the newcomer (a VF is
free only after its device-removed event).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from sova.analyze.findings import Findings, IntensityClass
from sova.analyze.intensity_class import IntensityScores, scores_of, vf_eligible
from sova.model.actions import Action, AttachVF, DetachVF, SetVFRate
from sova.model.knowledge import Knowledge
from sova.model.schema import Field
from sova.model.snapshot import Snapshot
from sova.plan.base import Policy, register
from sova.plan.vf_allocation import Candidate, assign_tiers, choose_holders, rate_tiers

VF_PARAMS = {
    "period": Field("duration", 10.0, "how often the VF scheduler runs (the papers: 10 s)", lo=0, lo_open=True),
    "window": Field("duration", 30.0, "seconds of 1 s samples the factors are computed over", lo=1),
    "classifier": Field(
        "str", "heaps", "heaps (IF/NF, Algorithm 1) or threshold (io/net_degree)", choices=("heaps", "threshold")
    ),
    "eps": Field("float", 0.9, "heaps: NF's weight on Traffic_freq (Eq. 2; the paper gives none)", lo=0, hi=1),
    "eps_degree": Field(
        "float", 0.7, "threshold: net_degree's weight on data_avg (the SR-IOV paper's 0.7)", lo=0, hi=1
    ),
    "q": Field("int", 0, "heaps: size of the I/O heap (0: twice p, at most the VMs on the host)", lo=0),
    "p": Field("int", 4, "VFs to hand out per host (both papers limit them; their experiments use 2 and 4)", lo=1),
    "io_threshold": Field("float", 50.0, "threshold: io_degree above which a VM is I/O-intensive", lo=0, hi=100),
    "min_packets": Field(
        "float", 50.0, "packets a 1 s sample needs to count as network activity (above broadcast noise)", lo=0
    ),
    "margin": Field("float", 0.2, "relative network-score lead a newcomer needs to take a VF", lo=0),
    "io_ratio": Field("float", 2.0, "at equal network score, the I/O-score ratio that wins a VF", lo=1),
    "vf0": Field("bandwidth", 0.0, "lowest rate tier VF_0 (0: what completes the tiers to the port speed)", lo=0),
    "delta": Field("bandwidth", 0.0, "step between rate tiers (0: fitted to the holders' demands)", lo=0),
    "headroom": Field("float", 0.1, "automatic tiers cover each holder's measured demand plus this share", lo=0),
}


def vf_plan(snap: Snapshot, scores: IntensityScores, eligible: np.ndarray, p: dict, policy: str) -> list[Action]:
    """VF actions for every host among the `eligible` VMs. Only hosts whose holders could change, or whose
    holders outgrow their tiers, go through the per-host hand-over (``host_actions``)."""
    H = len(snap.hosts)
    nic = np.array(snap.vm_nic)
    slots = np.minimum(p["p"], snap.vfs_total).astype(np.int64)
    net, io, cand, demand = scores.net, scores.io, scores.candidate, scores.demand
    h = snap.vm_host
    holder = eligible & (nic == "vf")
    newcomer = cand & ~holder & eligible
    lost = np.bincount(h[holder & ~cand], minlength=H) > 0
    keep = np.bincount(h[holder & cand], minlength=H)
    plugging = np.bincount(h[nic == "attaching"], minlength=H)
    free = np.minimum(snap.vfs_total - snap.vfs_used, slots - keep - plugging)
    weakest = np.full(H, np.inf)
    np.minimum.at(weakest, h[holder & cand], net[holder & cand])
    best = np.full(H, -np.inf)
    np.maximum.at(best, h[newcomer], net[newcomer])
    may_swap = best >= weakest * (1 - p["margin"] / 2)
    fills = (free > 0) & (best > -np.inf)
    # a holder outgrows its tier when its mean demand (with headroom) exceeds it, or when its busiest
    # second reaches it: a duty-cycled stream is throttled whenever it runs even if its mean is lower
    tier = np.where(holder, snap.vm_vf_rate, np.inf)
    outgrown = (demand * (1 + p["headroom"]) > tier * 1.001) | (scores.peak >= 0.9 * tier)
    short = np.bincount(h[holder], weights=outgrown[holder], minlength=H) > 0
    busy = (slots > 0) & (lost | fills | may_swap | short)
    busy_hosts = np.flatnonzero(busy)
    on_busy = eligible & busy[h]
    order = np.flatnonzero(on_busy)[np.argsort(h[on_busy], kind="stable")]  # their eligible VMs, by host
    bounds = np.searchsorted(h[order], busy_hosts, side="right").tolist()
    columns = _Columns(
        snap.vms, snap.vm_nic, net.tolist(), io.tolist(), demand.tolist(), cand.tolist(), snap.vm_vf_rate.tolist()
    )
    order_list, start = order.tolist(), 0
    out: list[Action] = []
    for host, end in zip(busy_hosts.tolist(), bounds, strict=True):
        on, start = order_list[start:end], end
        out += host_actions(snap, host, on, columns, int(slots[host]), int(plugging[host]), p, policy)
    return out


class _Columns(NamedTuple):
    """What the hand-over reads of each VM, as plain Python values: a round visits every busy host's
    VMs one by one, and a numpy scalar costs several times a list item."""

    names: tuple[str, ...]
    nic: tuple[str, ...]
    net: list[float]
    io: list[float]
    demand: list[float]
    candidate: list[bool]
    vf_rate: list[float]


def host_actions(snap, host, on, columns: _Columns, slots, plugging, p, policy) -> list[Action]:
    """Unplug losers, plug newcomers into free VFs, retier holders: the hand-over for one host (`on`: its
    eligible VMs' indices)."""
    names, nic = columns.names, columns.nic
    holding = [v for v in on if nic[v] == "vf"]
    holders = {names[v] for v in holding}
    cands = [Candidate(names[v], columns.net[v], columns.io[v], columns.demand[v]) for v in on if columns.candidate[v]]
    chosen = choose_holders(cands, holders, slots, p["margin"], p["io_ratio"])
    keep = {c.vm for c in chosen}
    current = {names[v]: columns.vf_rate[v] for v in holding}
    headroom = 1 + p["headroom"]
    demands = [c.demand * headroom for c in chosen]
    bandwidth = float(snap.nic_bandwidth[host])
    tiers = assign_tiers(
        chosen, rate_tiers(len(chosen), bandwidth, p["vf0"], p["delta"], demands), current, p["margin"]
    )
    score = {c.vm: c for c in cands}
    actions: list[Action] = []
    for vm in sorted(holders - keep):
        why = (
            "no longer network-intensive"
            if vm not in score
            else f"a more network-intensive VM needs the VF (score {score[vm].net:.3g})"
        )
        actions.append(DetachVF(vm=vm, policy=policy, reason=f"{snap.hosts[host]}: {vm} {why}"))
    free = min(int(snap.vfs_total[host] - snap.vfs_used[host]), slots - len(holders & keep) - plugging)
    for c in chosen:
        if c.vm in holders:
            now = current[c.vm]
            if abs(now - tiers[c.vm]) > 0.01 * max(tiers[c.vm], 1.0):
                reason = f"{c.vm}: rate tier for {c.demand / 1e9:.2f} Gb/s of demand"
                actions.append(SetVFRate(vm=c.vm, rate=tiers[c.vm], policy=policy, reason=reason))
        elif free > 0:
            free -= 1
            reason = (
                f"{snap.hosts[host]}: {c.vm} is among the {slots} most network-intensive VMs "
                f"(network {c.net:.3g}, I/O {c.io:.3g}); tier {tiers[c.vm] / 1e9:.2f} Gb/s"
            )
            actions.append(AttachVF(vm=c.vm, rate=tiers[c.vm], policy=policy, reason=reason))
    return actions


@register
class DynamicSRIOV(Policy):
    name = "dsriov"
    priority = 40  # a VF handed out or taken back yields to a move
    loop = "local"
    summary = "give each host's SR-IOV VFs to its most network-intensive VMs, with rate tiers"
    schema = VF_PARAMS
    analyzers = {"intensity": {}}

    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        classes = findings.of(IntensityClass)
        if not classes:
            return []
        snap = knowledge.latest
        return vf_plan(snap, scores_of(classes, snap), vf_eligible(snap), self.settings, self.name)

    def score_hosts(self, knowledge: Knowledge, vm: int, candidates: np.ndarray) -> np.ndarray | None:
        """Extension point: a VM on a VF had better move to a host with a VF free, to get one back there."""
        snap = knowledge.latest
        if snap.vm_nic[vm] != "vf":
            return None
        return (snap.vfs_used < snap.vfs_total).astype(float)
