"""Model (Virtue §III-C): the exact minimax placement as a mixed-integer program, solved with HiGHS.

Variables: x[v,h] binary (VM v on host h), U >= 0 (the maximum utilization, minimized), and for every
pair (a, b) with traffic and every group G of the fabric a co-location w[a,b,G] in [0, 1]. With
y[a,G] = sum of x[a,h] over the hosts h of G, the compact tree formulation of the lab notes:
    out of G:  sum_(a,b) d_ab (y[a,G] - w[a,b,G]) + sum_a ext_tx_a y[a,G] <= U cap_G
    into G:    sum_(a,b) d_ab (y[b,G] - w[a,b,G]) + sum_a ext_rx_a y[a,G] <= U cap_G
    w[a,b,G] <= y[a,G],  w[a,b,G] <= y[b,G]     (w rises to min(y_a, y_b): both VMs inside G)
plus one host per VM, slots, memory, and CPU: sum_v cpu_v x[v,h] <= U cores_h. The direct arc-flow
model has a weak relaxation (the notes: 20 x 20 not proven in 60 s); this one proves small instances.
Per-VM knapsack cuts (the notes) lift the bound: VM a's host link carries a's traffic except what goes
to the partners b sharing its host, and c[a,b] in [0, 1] (b shares a's host) is limited by the slots,
memory and CPU left beside a:
    U cap_host >= out_a + ext_tx_a - sum_b d_ab c[a,b]   (and likewise into a)
    sum_b c[a,b] <= slots - 1,  sum_b mem_b c[a,b] <= memory - mem_a,  sum_b cpu_b c[a,b] <= U cores - cpu_a
The search starts from a heuristic placement (Greedy Fill by default), stops at ``time_limit`` or the
relative ``gap``, and reports the gap it reached.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix

from sova.plan.placement.minimax import Evaluator
from sova.plan.placement.problem import PlacementError, PlacementProblem


@dataclass(frozen=True)
class MipResult:
    x: np.ndarray
    value: float  # the objective of x (minimax utilization)
    bound: float  # the best proven lower bound
    gap: float  # (value - bound) / value as HiGHS reports it
    status: str
    seconds: float


class _Rows:
    """Sparse rows built as COO triplets, with bounds."""

    def __init__(self) -> None:
        self.row_ids: list[np.ndarray] = []
        self.col_ids: list[np.ndarray] = []
        self.values: list[np.ndarray] = []
        self.lo: list[float] = []
        self.hi: list[float] = []

    def add(self, cols, vals, lo: float, hi: float) -> None:
        n = len(self.lo)
        cols = np.asarray(cols, dtype=np.int64)
        self.row_ids.append(np.full(len(cols), n))
        self.col_ids.append(cols)
        self.values.append(np.asarray(vals, dtype=float))
        self.lo.append(lo)
        self.hi.append(hi)


def solve(
    problem: PlacementProblem,
    start: np.ndarray | None = None,
    time_limit: float = 60.0,
    gap: float = 0.0,
    threads: int = 0,
) -> MipResult:
    import highspy

    problem.check()
    V, H = problem.n_vms, problem.n_hosts
    inf = highspy.kHighsInf
    n_x = V * H
    col_u = n_x
    t = problem.traffic.tocoo()
    pa, pb, d = t.row, t.col, t.data
    groups = problem.levels.group
    n_w = sum(len(c) for c in problem.levels.cap) * len(d)
    n_col = n_x + 1 + n_w
    rows = _Rows()
    hosts = np.arange(H)
    for v in range(V):  # one host per VM
        rows.add(v * H + hosts, np.ones(H), 1.0, 1.0)
    if problem.rules is not None:
        _rule_rows(problem, rows)
    cap = problem.capacity()
    for h in range(H):
        col = np.arange(V) * H + h
        rows.add(col, np.ones(V), -inf, float(cap[h]))
        if problem.memory is not None and problem.host_memory is not None:
            rows.add(col, problem.memory, -inf, float(problem.host_memory[h]))
        rows.add(np.append(col, col_u), np.append(problem.cpu, -problem.host_cores[h]), -inf, 0.0)
    w0 = n_x + 1
    for g_of_host, caps in zip(groups, problem.levels.cap, strict=True):
        for g in range(len(caps)):
            members = hosts[g_of_host == g]
            if len(members) == 0:
                continue
            w = w0 + np.arange(len(d))
            w0 += len(d)

            def y(vm: int, members=members) -> np.ndarray:
                return vm * H + members

            for direction, ext in (("out", problem.external_tx), ("in", problem.external_rx)):
                cols, vals = [], []
                end = pa if direction == "out" else pb
                for k in range(len(d)):  # d_ab (y[end,G] - w[a,b,G])
                    cols += [y(int(end[k])), [w[k]]]
                    vals += [np.full(len(members), d[k]), [-d[k]]]
                for vm in np.flatnonzero(ext):
                    cols.append(y(int(vm)))
                    vals.append(np.full(len(members), ext[vm]))
                cols.append([col_u])
                vals.append([-caps[g]])
                rows.add(np.concatenate(cols), np.concatenate(vals), -inf, 0.0)
            for k in range(len(d)):  # w <= y_a, w <= y_b
                for vm in (int(pa[k]), int(pb[k])):
                    rows.add(np.append(w[k], y(vm)), np.append(1.0, -np.ones(len(members))), -inf, 0.0)
    kn = _knapsack_cuts(problem, rows, col_u, w0)
    n_col = w0 + len(kn[0])
    A = coo_matrix(
        (np.concatenate(rows.values), (np.concatenate(rows.row_ids), np.concatenate(rows.col_ids))),
        shape=(len(rows.lo), n_col),
    ).tocsc()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n_col, len(rows.lo)
    lp.col_cost_ = np.concatenate([np.zeros(n_x), [1.0], np.zeros(n_col - n_x - 1)])
    lp.col_lower_ = np.zeros(n_col)
    lp.col_upper_ = np.concatenate([np.ones(n_x), [inf], np.ones(n_col - n_x - 1)])
    lp.row_lower_, lp.row_upper_ = np.array(rows.lo), np.array(rows.hi)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
    lp.integrality_ = [highspy.HighsVarType.kInteger] * n_x + [highspy.HighsVarType.kContinuous] * (n_col - n_x)

    class SilentHighs(highspy.Highs):
        """highspy's Highs with no output from its start: its constructor enables callbacks, the first call that
        logs (HiGHS's banner, on the terminal), before output_flag could be set."""

        def enableCallbacks(self) -> None:
            self.setOptionValue("output_flag", False)
            super().enableCallbacks()

    h = SilentHighs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("mip_rel_gap", float(gap))
    h.setOptionValue("random_seed", 1)
    # HiGHS 1.16's RENS sub-MIP can sit in presolve (HPresolve::strengthenInequalities) far past the time
    # limit: a Virtue web-20 trial (k = 15) ran 25 min against a 10 s limit; without RENS it keeps it
    h.setOptionValue("mip_heuristic_run_rens", False)
    if threads:
        h.setOptionValue("threads", int(threads))
    h.passModel(lp)
    if start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(_start_columns(problem, start, n_col, d, pa, pb, kn))
        sol.value_valid = True
        h.setSolution(sol)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    info = h.getInfo()
    values = np.asarray(h.getSolution().col_value)
    if len(values) < n_x or info.primal_solution_status == 0:
        raise PlacementError(f"HiGHS found no placement ({status})")
    x = values[:n_x].reshape(V, H).argmax(axis=1)
    value = Evaluator(problem, "all", x).value()
    return MipResult(x, value, float(info.mip_dual_bound), float(info.mip_gap), status, float(h.getRunTime()))


def _rule_rows(problem: PlacementProblem, rows: _Rows) -> None:
    """The must placement rules as rows over x[v, h]: no VM on a host its host rules forbid, at most one
    VM of an anti-affinity rule per host, and every VM of an affinity rule on its first VM's host."""
    rules, H = problem.rules, problem.n_hosts
    for r, rule in enumerate(rules.rules):
        members = rules.members[r]
        if not rule.must or not len(members):
            continue
        if rule.kind in ("on-hosts", "off-hosts"):
            barred = np.flatnonzero(~rules.group[r] if rule.kind == "on-hosts" else rules.group[r])
            for v in members:
                rows.add(v * H + barred, np.ones(len(barred)), 0.0, 0.0)
        elif rule.kind == "anti-affinity":
            for h in range(H):
                rows.add(members * H + h, np.ones(len(members)), -np.inf, 1.0)
        else:
            for v in members[1:]:
                for h in range(H):
                    rows.add(np.array([members[0] * H + h, v * H + h]), np.array([1.0, -1.0]), 0.0, 0.0)


def _knapsack_cuts(problem: PlacementProblem, rows: _Rows, col_u: int, c0: int) -> tuple[np.ndarray, np.ndarray]:
    """Add the per-VM knapsack cuts with their columns c[a,b] from c0 on; returns (a, b) of each column.
    Hosts may differ: each bound takes the largest host, so the cuts stay valid for every host."""
    t = problem.traffic.tocsr()
    tt = problem.traffic.T.tocsr()
    both = (t + tt).tocsr()
    slots = float(problem.capacity().max()) - 1.0
    cores = float(problem.host_cores.max())
    cap = float(problem.levels.cap[0].max())
    mem = problem.memory if problem.memory is not None and problem.host_memory is not None else None
    sent, received = problem.nic_tx(), problem.nic_rx()
    ca, cb = [], []
    for a in range(problem.n_vms):
        partners = both.indices[both.indptr[a] : both.indptr[a + 1]]
        partners = partners[partners != a]
        cols = c0 + len(ca) + np.arange(len(partners))
        ca += [a] * len(partners)
        cb += partners.tolist()
        if len(partners):
            rows.add(cols, np.ones(len(partners)), -np.inf, slots)
            if mem is not None:
                rows.add(cols, mem[partners], -np.inf, float(problem.host_memory.max()) - mem[a])
            rows.add(np.append(cols, col_u), np.append(problem.cpu[partners], -cores), -np.inf, -problem.cpu[a])
        for m, total in ((t, sent[a]), (tt, received[a])):
            d = m[a].toarray().ravel()[partners]
            if total > 0:  # U cap - sum_b d_ab c[a,b] >= total
                rows.add(np.append(cols, col_u), np.append(d, cap), float(total), np.inf)
    return np.array(ca, dtype=np.int64), np.array(cb, dtype=np.int64)


def _start_columns(problem: PlacementProblem, x: np.ndarray, n_col: int, d, pa, pb, kn) -> np.ndarray:
    """A full column vector for a known placement: x, its U, every w at min(y_a, y_b), c[a,b] = a and b
    share a host."""
    V, H = problem.n_vms, problem.n_hosts
    col = np.zeros(n_col)
    col[np.arange(V) * H + x] = 1.0
    col[V * H] = Evaluator(problem, "all", x).value()
    w0 = V * H + 1
    for g_of_host, caps in zip(problem.levels.group, problem.levels.cap, strict=True):
        for g in range(len(caps)):
            if not (g_of_host == g).any():
                continue
            inside = g_of_host[x] == g
            col[w0 : w0 + len(d)] = inside[pa] & inside[pb]
            w0 += len(d)
    col[w0 : w0 + len(kn[0])] = x[kn[0]] == x[kn[1]]
    return col
