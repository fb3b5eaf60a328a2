"""Dynamic SR-IOV: each host's VFs go to its most network-intensive VMs (Raccoon / SR-IOV paper).

Runs in the local (per-host) loop every ``period`` on the samples of the last ``window`` seconds.
Two classifiers, as the two papers describe them:
- ``heaps`` (Sova Algorithm 1, lines 10-28, Raccoon): the q VMs with the largest IF form the I/O heap;
  among them the p with the largest NF get VFs (p = the VFs in use on the host, q between p and the
  number of VMs).
- ``threshold`` (SR-IOV paper §4.6): VMs whose io_degree exceeds ``io_threshold`` are I/O-intensive;
  they are ranked by net_degree and the top p get VFs.
Only VMs with traffic are candidates. NF's epsilon defaults to 0.9: the Sova paper gives no value, its
Table 1 NF follows the share of time netperf runs, and with 0.9 the traffic-volume term refines the
ranking without overturning a ten-point difference in that share (the volume of a VF holder also
depends on its rate tier, so a heavier volume weight feeds allocation back into the ranking). Holders change with hysteresis (``vf_allocation``), VFs carry
hierarchical rate tiers, and a swap happens over two rounds: the unplug frees the VF, the next round
plugs it into the newcomer (a VF is free only after its device-removed event).
"""

from __future__ import annotations

import numpy as np

from sova.analyze.intensity import io_degree, io_factor, net_degree, network_factor, traffic_samples
from sova.analyze.load import vms_by_host
from sova.analyze.samples import Samples, window_samples
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


def scores(s: Samples, snap: Snapshot, p: dict, eligible: np.ndarray, slots: np.ndarray):
    """(network score, I/O score, intensive?) of every VM, heap membership taken per host, vectorized."""
    active = traffic_samples(s, p["min_packets"]).any(axis=0)
    if p["classifier"] == "threshold":
        io, net = io_degree(s), net_degree(s, p["eps_degree"], p["min_packets"])
        return net, io, eligible & active & (io > p["io_threshold"])
    io, net = io_factor(s), network_factor(s, p["eps"], p["min_packets"])
    host = np.where(eligible, snap.vm_host, len(snap.hosts))  # ineligible VMs rank in a host of their own
    order = np.lexsort((-io, host))
    first = np.searchsorted(host[order], host[order])
    rank = np.empty(len(io), dtype=np.int64)
    rank[order] = np.arange(len(io)) - first
    n_on = np.bincount(host, minlength=len(snap.hosts) + 1)[: len(snap.hosts)]
    q = np.minimum(np.maximum(p["q"] or 2 * slots, slots), n_on)
    in_heap = eligible & (rank < np.append(q, 0)[host])
    return net, io, in_heap & active


def vf_plan(snap: Snapshot, s: Samples, p: dict, policy: str, exclude: set[str] = frozenset()) -> list[Action]:
    """VF actions for every host. Scores are computed for all VMs at once; only hosts whose holders could
    change, or whose holders outgrow their tiers, go through the per-host hand-over (``host_actions``)."""
    H = len(snap.hosts)
    nic = np.array(snap.vm_nic)
    eligible = ~snap.vm_migrating & np.isin(nic, ("vnic", "vf"))
    if exclude:
        eligible &= ~np.isin(np.array(snap.vms), list(exclude))
    slots = np.minimum(p["p"], snap.vfs_total).astype(np.int64)
    net, io, cand = scores(s, snap, p, eligible, slots)
    demand = s.data.sum(axis=0) * 8 / max(s.seconds.sum(), 1e-9)
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
    peak = (s.data * 8 / s.seconds[:, None]).max(axis=0)
    outgrown = (demand * (1 + p["headroom"]) > tier * 1.001) | (peak >= 0.9 * tier)
    short = np.bincount(h[holder], weights=outgrown[holder], minlength=H) > 0
    busy = (slots > 0) & (lost | fills | may_swap | short)
    members = vms_by_host(h, H)
    out: list[Action] = []
    for host in np.flatnonzero(busy):
        on = members[host][eligible[members[host]]]
        out += host_actions(
            snap, int(host), on, net, io, cand, demand, int(slots[host]), int(plugging[host]), p, policy
        )
    return out


def host_actions(snap, host, on, net, io, cand, demand, slots, plugging, p, policy) -> list[Action]:
    """Unplug losers, plug newcomers into free VFs, retier holders: the hand-over for one host."""
    holders = {snap.vms[v] for v in on if snap.vm_nic[v] == "vf"}
    cands = [Candidate(snap.vms[v], float(net[v]), float(io[v]), float(demand[v])) for v in on if cand[v]]
    chosen = choose_holders(cands, holders, slots, p["margin"], p["io_ratio"])
    keep = {c.vm for c in chosen}
    current = {snap.vms[v]: float(snap.vm_vf_rate[v]) for v in on if snap.vm_nic[v] == "vf"}
    demands = np.array([c.demand for c in chosen]) * (1 + p["headroom"])
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
    loop = "local"
    summary = "give each host's SR-IOV VFs to its most network-intensive VMs, with rate tiers"
    params = VF_PARAMS

    def plan(self, knowledge: Knowledge) -> list[Action]:
        s = window_samples(knowledge, self.settings["window"])
        if s is None:
            return []
        return vf_plan(knowledge.latest, s, self.settings, self.name)
