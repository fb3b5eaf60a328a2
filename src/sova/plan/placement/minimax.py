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
Traffic between a placed VM and one not placed yet loads the placed VM's host link (it leaves the host
unless the partner joins it later, and the VM's NIC counters show it), but no link above: where it goes
is not known yet. For that, host-level loads have one more, uncapacitated group: "not placed" (U).
"""

from __future__ import annotations

import numpy as np

from sova.plan.placement.problem import PlacementProblem

ENERGIES = ("cpu", "nic", "nic-tm", "all", "links")


class Evaluator:
    """Loads of every resource under placement ``x``; ``move`` keeps them exact in O(VM's partners)."""

    def __init__(self, problem: PlacementProblem, energy: str, x: np.ndarray):
        if energy not in ENERGIES:
            raise ValueError(f"unknown energy {energy!r}; expected one of {', '.join(ENERGIES)}")
        self.problem = problem
        self.energy = energy
        self.n_levels = {"cpu": 0, "nic": 1, "nic-tm": 1}.get(energy, len(problem.levels.group))
        self.use_cpu = energy != "links"
        self.groups = list(problem.levels.group[: self.n_levels])
        self.caps = list(problem.levels.cap[: self.n_levels])
        if self.n_levels and energy != "nic":
            # group U (not placed) at the host level: x = -1 indexes the appended entry
            self.groups[0] = np.append(self.groups[0], len(self.caps[0]))
            self.caps[0] = np.append(self.caps[0], np.inf)
        self.tx, self.rx = problem.nic_tx(), problem.nic_rx()
        self.x = np.asarray(x, dtype=np.int64).copy()
        self._full()

    # ------------------------------------------------------------------ full computation
    def _full(self) -> None:
        p, x = self.problem, self.x
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
        for lvl, g in enumerate(self.groups):
            keep = (on[t.row] | on[t.col]) if lvl == 0 else (on[t.row] & on[t.col])
            i, j, w = t.row[keep], t.col[keep], t.data[keep]
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
        best = float((self.cpu / self.problem.host_cores).max(initial=0.0)) if self.use_cpu else 0.0
        for out, inn, cap in zip(self.out, self.inn, self.caps, strict=True):
            best = max(best, float((out / cap).max(initial=0.0)), float((inn / cap).max(initial=0.0)))
        return best

    def utilizations(self) -> dict[str, np.ndarray]:
        """Per resource kind: its utilizations (cpu per host; per level, up and down)."""
        out = {"cpu": self.cpu / self.problem.host_cores}
        for name, o, i, cap in zip(
            self.problem.levels.names, self.out, self.inn, self.problem.levels.cap, strict=False
        ):
            n = len(cap)  # the levels' own groups: without U
            out[f"{name}-up"] = o[:n] / cap
            out[f"{name}-down"] = i[:n] / cap
        return out

    # ------------------------------------------------------------------ incremental
    def _partners(self, v: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(hosts of the VMs v sends to, rates, hosts of the VMs sending to v, rates); -1: not placed."""
        p, x = self.problem, self.x
        r0, r1 = p.traffic.indptr[v], p.traffic.indptr[v + 1]
        c = p.traffic_csc
        c0, c1 = c.indptr[v], c.indptr[v + 1]
        return x[p.traffic.indices[r0:r1]], p.traffic.data[r0:r1], x[c.indices[c0:c1]], c.data[c0:c1]

    def _shift(self, v: int, host: int, sign: float) -> None:
        """Add (sign=1) or remove (sign=-1) VM v's loads as if it ran on `host` (-1: in U, host level only)."""
        p = self.problem
        if host >= 0:
            self.cpu[host] += sign * p.cpu[v]
        if self.n_levels == 0:
            return
        if self.energy == "nic":
            if host >= 0:
                self.out[0][host] += sign * self.tx[v]
                self.inn[0][host] += sign * self.rx[v]
            return
        hd_all, to_all, hs_all, ti_all = self._partners(v)
        for lvl, g in enumerate(self.groups):
            if lvl > 0 and host < 0:
                break
            hd, t_out, hs, t_in = hd_all, to_all, hs_all, ti_all
            if lvl > 0:  # partners not placed yet count at the host level only
                hd, t_out, hs, t_in = hd[hd >= 0], t_out[hd >= 0], hs[hs >= 0], t_in[hs >= 0]
            gv = g[host]
            gd, gs = g[hd], g[hs]
            xo, xi = gd != gv, gs != gv
            so, si = sign * t_out[xo], sign * t_in[xi]
            ext_tx, ext_rx = (p.external_tx[v], p.external_rx[v]) if host >= 0 else (0.0, 0.0)
            self.out[lvl][gv] += so.sum() + sign * ext_tx
            np.add.at(self.inn[lvl], gd[xo], so)
            self.inn[lvl][gv] += si.sum() + sign * ext_rx
            np.add.at(self.out[lvl], gs[xi], si)

    def move(self, v: int, host: int) -> None:
        """Place VM v on `host` (-1: unplace it), updating every load."""
        old = int(self.x[v])
        if old == host:
            return
        self._shift(v, old, -1.0)
        self._shift(v, host, 1.0)
        self.x[v] = host

    # ------------------------------------------------------------------ every host at once
    def scores_if_placed(self, v: int) -> np.ndarray:
        """For an unplaced VM v: the objective for each host if v were placed there (vectorized)."""
        return self.scores_and_local(v)[0]

    def scores_and_local(self, v: int) -> tuple[np.ndarray, np.ndarray]:
        """For an unplaced VM v, per host: the objective if v were placed there, and the highest
        utilization among the resources of that host and its groups (what v's arrival loads most)."""
        p = self.problem
        assert self.x[v] < 0, "scores_if_placed takes an unplaced VM"
        cpu_u = self.cpu / p.host_cores
        new_cpu = (self.cpu + p.cpu[v]) / p.host_cores
        score = np.maximum(new_cpu, _max_excluding_each(cpu_u)) if self.use_cpu else np.zeros(p.n_hosts)
        local = new_cpu if self.use_cpu else np.zeros(p.n_hosts)
        if self.n_levels == 0:
            return score, local
        if self.energy == "nic":
            own_o = (self.out[0] + self.tx[v]) / self.caps[0]
            own_i = (self.inn[0] + self.rx[v]) / self.caps[0]
            rest = _max_excluding_each(np.maximum(self.out[0], self.inn[0]) / self.caps[0])
            own = np.maximum(own_o, own_i)
            return np.maximum(score, np.maximum(own, rest)), np.maximum(local, own)
        hd_all, to_all, hs_all, ti_all = self._partners(v)
        s_out, s_in = to_all.sum() + p.external_tx[v], ti_all.sum() + p.external_rx[v]
        for lvl, (g, out, inn, cap) in enumerate(zip(self.groups, self.out, self.inn, self.caps, strict=True)):
            n = len(cap)
            if lvl == 0:
                # v leaves U: its partners' hosts already count its traffic, except the host it joins
                so = np.bincount(g[hd_all], weights=to_all, minlength=n)
                si = np.bincount(g[hs_all], weights=ti_all, minlength=n)
                own_o = (out + s_out - so - si) / cap
                own_i = (inn + s_in - si - so) / cap
                rest = _max_excluding_each(np.maximum(out, inn) / cap)
                own = np.maximum(own_o, own_i)[g[:-1]]
                score = np.maximum(score, np.maximum(own, rest[g[:-1]]))
                local = np.maximum(local, own)
                continue
            keep_d, keep_s = hd_all >= 0, hs_all >= 0
            hd, t_out, hs, t_in = hd_all[keep_d], to_all[keep_d], hs_all[keep_s], ti_all[keep_s]
            s_out_l, s_in_l = t_out.sum() + p.external_tx[v], t_in.sum() + p.external_rx[v]
            so = np.bincount(g[hd], weights=t_out, minlength=n)  # v's traffic to partners in each group
            si = np.bincount(g[hs], weights=t_in, minlength=n)
            # v outside group G: G receives what v sends to its members, and sends what they send to v
            outside = np.maximum((inn + so) / cap, (out + si) / cap)
            # v inside G: G sends what v sends to non-members (and outside the problem), receives likewise
            inside = np.maximum((out + s_out_l - so) / cap, (inn + s_in_l - si) / cap)
            score = np.maximum(score, np.maximum(inside[g], _max_excluding_each(outside)[g]))  # g: host -> group
            local = np.maximum(local, inside[g])
        return score, local


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
