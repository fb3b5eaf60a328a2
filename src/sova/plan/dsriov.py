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
    "min_packets": Field("float", 10.0, "packets a 1 s sample needs to count as network activity", lo=0),
    "margin": Field("float", 0.2, "relative network-score lead a newcomer needs to take a VF", lo=0),
    "io_ratio": Field("float", 2.0, "at equal network score, the I/O-score ratio that wins a VF", lo=1),
    "vf0": Field("bandwidth", 0.0, "lowest rate tier VF_0 (0: what completes the tiers to the port speed)", lo=0),
    "delta": Field("bandwidth", 0.0, "step between rate tiers (0: fitted to the holders' demands)", lo=0),
    "headroom": Field("float", 0.1, "automatic tiers cover each holder's measured demand plus this share", lo=0),
}


def classify(s: Samples, idx: np.ndarray, p: dict, slots: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(network score, I/O score, intensive?) for the VMs `idx` of one host."""
    sub = s.select(idx)
    active = traffic_samples(sub, p["min_packets"]).any(axis=0)
    if p["classifier"] == "threshold":
        io, net = io_degree(sub), net_degree(sub, p["eps_degree"], p["min_packets"])
        return net, io, active & (io > p["io_threshold"])
    io, net = io_factor(sub), network_factor(sub, p["eps"], p["min_packets"])
    q = p["q"] or 2 * slots
    q = min(max(q, slots), len(idx))
    in_heap = np.zeros(len(idx), dtype=bool)
    in_heap[np.argsort(-io, kind="stable")[:q]] = True
    return net, io, active & in_heap


def vf_actions(
    snap: Snapshot, s: Samples, host: int, p: dict, policy: str, exclude: set[str] = frozenset()
) -> list[Action]:
    """The VF actions for one host: unplug losers, plug newcomers into free VFs, retier holders."""
    total = int(snap.vfs_total[host])
    if total == 0:
        return []
    on = np.flatnonzero((snap.vm_host == host) & ~snap.vm_migrating)
    on = np.array([v for v in on if snap.vm_nic[v] in ("vnic", "vf") and snap.vms[v] not in exclude], dtype=np.int64)
    slots = min(p["p"], total)
    actions: list[Action] = []
    holders = {snap.vms[v] for v in on if snap.vm_nic[v] == "vf"}
    if len(on) == 0:
        return actions
    net, io, intensive = classify(s, on, p, slots)
    demand = s.data[:, on].sum(axis=0) * 8 / max(s.seconds.sum(), 1e-9)
    cands = [
        Candidate(snap.vms[v], float(net[i]), float(io[i]), float(demand[i])) for i, v in enumerate(on) if intensive[i]
    ]
    chosen = choose_holders(cands, holders, slots, p["margin"], p["io_ratio"])
    keep = {c.vm for c in chosen}
    current = {snap.vms[v]: float(snap.vm_vf_rate[v]) for v in on if snap.vm_nic[v] == "vf"}
    # tiers for the VFs in use: sum VF_n <= B over them, so a few holders are not starved by idle VFs
    demands = np.array([c.demand for c in chosen]) * (1 + p["headroom"])
    tiers = assign_tiers(
        chosen,
        rate_tiers(len(chosen), float(snap.nic_bandwidth[host]), p["vf0"], p["delta"], demands),
        current,
        p["margin"],
    )
    score = {c.vm: c for c in cands}
    for vm in sorted(holders - keep):
        why = (
            "no longer network-intensive"
            if vm not in score
            else f"a more network-intensive VM needs the VF (score {score[vm].net:.3g})"
        )
        actions.append(DetachVF(vm=vm, policy=policy, reason=f"{snap.hosts[host]}: {vm} {why}"))
    plugging = sum(1 for v in np.flatnonzero(snap.vm_host == host) if snap.vm_nic[v] == "attaching")
    free = min(total - int(snap.vfs_used[host]), slots - len(holders & keep) - plugging)
    for c in chosen:
        if c.vm in holders:
            current = float(snap.vm_vf_rate[snap.vms.index(c.vm)])
            if abs(current - tiers[c.vm]) > 0.01 * max(tiers[c.vm], 1.0):
                actions.append(
                    SetVFRate(
                        vm=c.vm,
                        rate=tiers[c.vm],
                        policy=policy,
                        reason=f"{c.vm}: rate tier for {c.demand / 1e9:.2f} Gb/s of demand",
                    )
                )
        elif free > 0:
            free -= 1
            actions.append(
                AttachVF(
                    vm=c.vm,
                    rate=tiers[c.vm],
                    policy=policy,
                    reason=(
                        f"{snap.hosts[host]}: {c.vm} is among the {slots} most network-intensive VMs "
                        f"(network {c.net:.3g}, I/O {c.io:.3g}); tier {tiers[c.vm] / 1e9:.2f} Gb/s"
                    ),
                )
            )
    return actions


@register
class DynamicSRIOV(Policy):
    name = "dsriov"
    loop = "local"
    summary = "give each host's SR-IOV VFs to its most network-intensive VMs, with rate tiers"
    params = VF_PARAMS

    def plan(self, knowledge: Knowledge) -> list[Action]:
        s = window_samples(knowledge, self.p["window"])
        if s is None:
            return []
        snap = knowledge.latest
        out: list[Action] = []
        for h in range(len(snap.hosts)):
            out += vf_actions(snap, s, h, self.p, self.name)
        return out
