"""The minimax objective (Virtue §III-A): the utilization of the most utilized resource, a host CPU or a
network link, for a placement; updated incrementally when one VM moves.

Four energies, the information each of the paper's algorithms has (its Table I):
- ``cpu``     (SA C): host CPU only;
- ``nic``     (SA CN): plus each host's NIC, as the sum of its VMs' NIC rates (intra-host traffic included,
  since without the traffic matrix it cannot be told apart);
- ``nic-tm``  (SA CNTM): the NIC estimate without traffic between VMs of one host;
- ``all``     (SA All, Greedy Fill, Model): every link of the tree (``fabric.Levels``);
- ``links``   (Greedy Net): every link, no CPU (Greedy Net has the network's data only).
A placement is an array: VM -> host index (-1: not placed yet; Greedy Fill builds one VM at a time).
"""

from __future__ import annotations

import numpy as np

from sova.plan.placement.problem import Problem

ENERGIES = ("cpu", "nic", "nic-tm", "all", "links")


class Evaluator:
    """Loads of every resource under placement ``x``; ``move`` keeps them exact in O(VM's partners)."""

    def __init__(self, problem: Problem, energy: str, x: np.ndarray):
        if energy not in ENERGIES:
            raise ValueError(f"unknown energy {energy!r}; expected one of {', '.join(ENERGIES)}")
        self.p = problem
        self.energy = energy
        self.n_levels = {"cpu": 0, "nic": 1, "nic-tm": 1}.get(energy, len(problem.levels.group))
        self.use_cpu = energy != "links"
        self.groups = problem.levels.group[: self.n_levels]
        self.caps = problem.levels.cap[: self.n_levels]
        self.tx, self.rx = problem.nic_tx(), problem.nic_rx()
        self.x = np.asarray(x, dtype=np.int64).copy()
        self._full()

    # ------------------------------------------------------------------ full computation
    def _full(self) -> None:
        p, x = self.p, self.x
        on = x >= 0
        self.cpu = np.bincount(x[on], weights=p.cpu[on], minlength=p.n_hosts).astype(float)  # float even if empty
        self.out = [np.zeros(len(c)) for c in self.caps]
        self.inn = [np.zeros(len(c)) for c in self.caps]
        if self.n_levels == 0:
            return
        if self.energy == "nic":
            self.out[0] = np.bincount(x[on], weights=self.tx[on], minlength=p.n_hosts).astype(float)
            self.inn[0] = np.bincount(x[on], weights=self.rx[on], minlength=p.n_hosts).astype(float)
            return
        t = p.traffic.tocoo()
        keep = on[t.row] & on[t.col]
        i, j, w = t.row[keep], t.col[keep], t.data[keep]
        for lvl, g in enumerate(self.groups):
            gi, gj = g[x[i]], g[x[j]]
            cross = gi != gj
            self.out[lvl] += np.bincount(gi[cross], weights=w[cross], minlength=len(self.out[lvl]))
            self.inn[lvl] += np.bincount(gj[cross], weights=w[cross], minlength=len(self.inn[lvl]))
            gv = g[x[on]]
            self.out[lvl] += np.bincount(gv, weights=p.external_tx[on], minlength=len(self.out[lvl]))
            self.inn[lvl] += np.bincount(gv, weights=p.external_rx[on], minlength=len(self.inn[lvl]))

    # ------------------------------------------------------------------ the objective
    def value(self) -> float:
        """The utilization of the most utilized resource."""
        best = float((self.cpu / self.p.host_cores).max(initial=0.0)) if self.use_cpu else 0.0
        for out, inn, cap in zip(self.out, self.inn, self.caps, strict=True):
            best = max(best, float((out / cap).max(initial=0.0)), float((inn / cap).max(initial=0.0)))
        return best

    def utilizations(self) -> dict[str, np.ndarray]:
        """Per resource kind: its utilizations (cpu per host; per level, up and down)."""
        out = {"cpu": self.cpu / self.p.host_cores}
        for name, o, i, cap in zip(self.p.levels.names, self.out, self.inn, self.caps, strict=False):
            out[f"{name}-up"] = o / cap
            out[f"{name}-down"] = i / cap
        return out

    # ------------------------------------------------------------------ incremental
    def _partners(self, v: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(hosts of the VMs v sends to, rates, hosts of the VMs sending to v, rates), placed VMs only."""
        p, x = self.p, self.x
        r0, r1 = p.traffic.indptr[v], p.traffic.indptr[v + 1]
        dst, t_out = p.traffic.indices[r0:r1], p.traffic.data[r0:r1]
        c = p.traffic_csc
        c0, c1 = c.indptr[v], c.indptr[v + 1]
        src, t_in = c.indices[c0:c1], c.data[c0:c1]
        hd, hs = x[dst], x[src]
        return hd[hd >= 0], t_out[hd >= 0], hs[hs >= 0], t_in[hs >= 0]

    def _shift(self, v: int, host: int, sign: float) -> None:
        """Add (sign=1) or remove (sign=-1) VM v's loads as if it ran on `host`."""
        p = self.p
        self.cpu[host] += sign * p.cpu[v]
        if self.n_levels == 0:
            return
        if self.energy == "nic":
            self.out[0][host] += sign * self.tx[v]
            self.inn[0][host] += sign * self.rx[v]
            return
        hd, t_out, hs, t_in = self._partners(v)
        for lvl, g in enumerate(self.groups):
            gv = g[host]
            gd, gs = g[hd], g[hs]
            xo, xi = gd != gv, gs != gv
            so, si = sign * t_out[xo], sign * t_in[xi]
            self.out[lvl][gv] += so.sum() + sign * p.external_tx[v]
            np.add.at(self.inn[lvl], gd[xo], so)
            self.inn[lvl][gv] += si.sum() + sign * p.external_rx[v]
            np.add.at(self.out[lvl], gs[xi], si)

    def move(self, v: int, host: int) -> None:
        """Place VM v on `host` (-1: unplace it), updating every load."""
        old = int(self.x[v])
        if old == host:
            return
        if old >= 0:
            self.x[v] = -1
            self._shift(v, old, -1.0)
        if host >= 0:
            self._shift(v, host, 1.0)
            self.x[v] = host

    # ------------------------------------------------------------------ every host at once
    def scores_if_placed(self, v: int) -> np.ndarray:
        """For an unplaced VM v: the objective for each host if v were placed there (vectorized)."""
        p = self.p
        assert self.x[v] < 0, "scores_if_placed takes an unplaced VM"
        cpu_u = self.cpu / p.host_cores
        new_cpu = (self.cpu + p.cpu[v]) / p.host_cores
        score = np.maximum(new_cpu, _max_excluding_each(cpu_u)) if self.use_cpu else np.zeros(p.n_hosts)
        if self.n_levels == 0:
            return score
        if self.energy == "nic":
            own_o = (self.out[0] + self.tx[v]) / self.caps[0]
            own_i = (self.inn[0] + self.rx[v]) / self.caps[0]
            rest = _max_excluding_each(np.maximum(self.out[0], self.inn[0]) / self.caps[0])
            return np.maximum(score, np.maximum(np.maximum(own_o, own_i), rest))
        hd, t_out, hs, t_in = self._partners(v)
        s_out, s_in = t_out.sum() + p.external_tx[v], t_in.sum() + p.external_rx[v]
        for g, out, inn, cap in zip(self.groups, self.out, self.inn, self.caps, strict=True):
            n = len(cap)
            so = np.bincount(g[hd], weights=t_out, minlength=n)  # v's traffic to partners in each group
            si = np.bincount(g[hs], weights=t_in, minlength=n)
            # v outside group G: G receives what v sends to its members, and sends what they send to v
            outside = np.maximum((inn + so) / cap, (out + si) / cap)
            # v inside G: G sends what v sends to non-members (and outside the problem), receives likewise
            inside = np.maximum((out + s_out - so) / cap, (inn + s_in - si) / cap)
            score = np.maximum(score, np.maximum(inside[g], _max_excluding_each(outside)[g]))  # g: host -> group
        return score


def _max_excluding_each(a: np.ndarray) -> np.ndarray:
    """For each i: max of a over all j != i (top-two trick)."""
    if len(a) == 1:
        return np.zeros(1)
    i = int(np.argmax(a))
    top = a[i]
    second = np.max(np.delete(a, i))
    out = np.full(len(a), top)
    out[i] = second
    return out
