"""Flows and their routes: the incidence of every live flow on links, NICs, Dom0 CPU, VF caps and
rate limits (rebuilt only for flows whose VM moved), and the max-min fair solve over it.

A part of ``Simulator`` (sim/engine.py), which holds the state these methods work on.
"""

from __future__ import annotations

import zlib

import numpy as np
from scipy.sparse import csr_matrix

from sova.sim import datapath, mapreduce, web_service
from sova.sim.datapath import NODE, VM, VM_DOM0
from sova.sim.maxmin import max_min_fair
from sova.sim.records import Flow, SimError

_PER_VM = (VM, VM_DOM0)  # endpoint kinds whose route depends on a VM's host and NIC mode
# per-flow fields of its route: (attribute, dtype, value while the flow has no route)
_FLOW_FIELDS = (
    ("flow_latency", float, 0.0),
    ("flow_src_pv", bool, False),
    ("flow_dst_pv", bool, False),
    ("flow_src_host", np.int64, -1),
    ("flow_dst_host", np.int64, -1),
    ("flow_tx_host", np.int64, -1),
    ("flow_tx_vf", bool, False),
)


class Routing:
    """The network part of the simulator: flows, their routes and the max-min fair solve."""

    def _add_flow(self, src: tuple[int, int], dst: tuple[int, int], kind: str) -> int:
        self.flows.append(Flow(src, dst, kind))
        # the VMs whose host or NIC mode its route depends on (-1: an end that is no VM)
        self._flow_end_vms += [end[1] if end[0] in _PER_VM else -1 for end in (src, dst)]
        self._routes_dirty = True
        return len(self.flows) - 1

    def _register_workload_flows(self) -> None:
        w = self.workloads
        ext = (NODE, self.topology.external)
        if (g := w.group("netperf")) is not None:
            ids = []
            for vm, peer, direction in zip(g.vm, g.params["peer"], g.params["direction"], strict=True):
                a, b = (VM, int(vm)), (VM, int(peer)) if peer >= 0 else ext
                src, dst = (a, b) if direction == "tx" else (b, a)
                ids.append(self._add_flow(src, dst, "netperf"))
            g.flows["main"] = np.array(ids, dtype=np.int64)
        if (g := w.group("httperf")) is not None:
            resp, req = [], []
            for vm, client in zip(g.vm, g.params["client"], strict=True):
                c = (VM, int(client)) if client >= 0 else ext
                resp.append(self._add_flow((VM, int(vm)), c, "http-response"))
                req.append(self._add_flow(c, (VM, int(vm)), "http-request"))
            g.flows["response"] = np.array(resp, dtype=np.int64)
            g.flows["request"] = np.array(req, dtype=np.int64)
        if (g := w.group("transfer")) is not None:
            g.flows["main"] = np.array(
                [
                    self._add_flow((VM, int(v)), (VM, int(p)) if p >= 0 else ext, "transfer")
                    for v, p in zip(g.vm, g.params["peer"], strict=True)
                ],
                dtype=np.int64,
            )
        vm_pair = lambda a, b, kind: self._add_flow((VM, a), (VM, b), kind)  # noqa: E731
        self.web = web_service.register(g, self.vm_names, vm_pair) if (g := w.group("web")) is not None else None
        self.web_rate = np.zeros(len(self.web) if self.web else 0)  # requests/s of each stream, last step
        self.jobs = mapreduce.register(g, vm_pair) if (g := w.group("mapreduce")) is not None else None
        if (g := w.group("bitbrains")) is not None:
            g.flows["tx"] = np.array([self._add_flow((VM, int(v)), ext, "trace") for v in g.vm])
            g.flows["rx"] = np.array([self._add_flow(ext, (VM, int(v)), "trace") for v in g.vm])
        # one read and one write stream per VM that does storage IO, its host's Dom0 <-> storage server
        io_vms = sorted({int(v) for k in ("fio", "bitbrains") if (g := w.group(k)) is not None for v in g.vm})
        self.io_flow_read = np.full(self.V, -1, dtype=np.int64)
        self.io_flow_write = np.full(self.V, -1, dtype=np.int64)
        if io_vms and not self.storage_names:
            raise SimError("workloads do storage IO but the scenario has no [[storage]] server")
        for v in io_vms:
            st = (NODE, int(self.storage_node[self.vm_storage[v]]))
            self.io_flow_read[v] = self._add_flow(st, (VM_DOM0, v), "io")
            self.io_flow_write[v] = self._add_flow((VM_DOM0, v), st, "io")

    def _rebuild_routes(self) -> None:
        """Route the flows that need it (new, ended, or with an end on a VM that moved or changed NIC
        mode), then lay every live route out as the flow x resource matrix."""
        n_f = len(self.flows)
        cache = self._route_cache
        cache.extend([None] * (n_f - len(cache)))
        self._grow_flow_arrays(n_f)
        for f in self._flows_to_route(n_f):
            fl = self.flows[f]
            r = self._route(f, fl) if fl.alive else None
            cache[f] = r
            self._set_flow_fields(f, r)
        live = np.array([f for f, r in enumerate(cache) if r is not None], dtype=np.int64)
        routes = [cache[f] for f in live]
        cat = lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dtype=dt)  # noqa: E731
        rows_a = cat([r.resources for r in routes], np.int64)
        cols_a = np.repeat(live, [len(r.resources) for r in routes]).astype(np.int64)
        coef_a = cat([r.coef for r in routes], float)
        d0_a = cat([r.dom0_host for r in routes], np.int64)
        cross_a = cat([r.crossings for r in routes], np.int64)
        # CSR by flow (rows = flows) keeps each flow's entries together, in path order
        self._ft = csr_matrix(
            (np.arange(len(rows_a), dtype=float) + 1, (cols_a, rows_a)), shape=(n_f, self.layout.size)
        )
        perm = self._ft.data.astype(np.int64) - 1
        self._entry_res = rows_a[perm]
        self._entry_flow = cols_a[perm]
        self._entry_base = coef_a[perm]
        self._entry_dom0 = d0_a[perm]
        self._entry_cross = cross_a[perm]
        self._ft.data = self._entry_base.copy()
        self._a = self._ft.T.tocsr()
        self._a_perm = None
        self._tie = self._tie_matrix(n_f)
        self._routes_dirty = False
        self._moved_vms.clear()
        self._last_solve_key = None

    def _flows_to_route(self, n_f: int) -> np.ndarray:
        alive = np.fromiter((fl.alive for fl in self.flows), dtype=bool, count=n_f)
        routed = np.fromiter((r is not None for r in self._route_cache[:n_f]), dtype=bool, count=n_f)
        need = alive != routed  # new flows, and ended flows still routed
        if self._moved_vms:
            moved = np.fromiter(self._moved_vms, dtype=np.int64)
            ends = np.asarray(self._flow_end_vms, dtype=np.int64).reshape(n_f, 2)
            need |= alive & np.isin(ends, moved).any(axis=1)
        return np.flatnonzero(need)

    def _route(self, f: int, fl: Flow) -> datapath.Route:
        return datapath.route(
            self.layout,
            self.topology,
            fl.src,
            fl.dst,
            self.vm_host,
            self.vm_vf,
            self.dom0_cost_bit,
            self.params["pv_latency"],
            self.params["vf_latency"],
            zlib.crc32(f"{fl.src}{fl.dst}{f}".encode()),
        )

    def _grow_flow_arrays(self, n_f: int) -> None:
        """The per-flow route fields, kept between rebuilds; new flows start unrouted."""
        have = len(self.flow_latency) if hasattr(self, "flow_latency") else -1
        if have == n_f:
            return
        have = max(have, 0)
        grow = n_f - have
        old = {name: getattr(self, name, None) for name, _, _ in _FLOW_FIELDS}
        for name, dtype, empty in _FLOW_FIELDS:
            fresh = np.full(grow, empty, dtype=dtype)
            setattr(self, name, fresh if old[name] is None else np.concatenate([old[name], fresh]))

    def _set_flow_fields(self, f: int, r: datapath.Route | None) -> None:
        if r is None:
            for name, _, empty in _FLOW_FIELDS:
                getattr(self, name)[f] = empty
            return
        self.flow_latency[f] = r.latency
        self.flow_src_pv[f], self.flow_dst_pv[f] = r.src_pv, r.dst_pv
        self.flow_src_host[f], self.flow_dst_host[f] = r.src_host, r.dst_host
        self.flow_tx_host[f], self.flow_tx_vf[f] = r.tx_host, r.tx_vf

    def _tie_matrix(self, n_f: int) -> csr_matrix | None:
        """T (flows x units): a free flow is its own unit; a web stream's flows carry its rate x bits."""
        if not self.web:
            return None
        st = self.web
        free = np.ones(n_f, dtype=bool)
        free[st.tie_flow] = False
        self._free_flows = np.flatnonzero(free)
        nf = len(self._free_flows)
        rows = np.concatenate([self._free_flows, st.tie_flow])
        cols = np.concatenate([np.arange(nf), nf + st.tie_stream])
        vals = np.concatenate([np.ones(nf), st.tie_bits])
        return csr_matrix((vals, (rows, cols)), shape=(n_f, nf + len(st)))

    def _solve(self, cap: np.ndarray, demand: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        """Max-min fair rates of the flows; web streams share as units (requests/s) through T."""
        if self._tie is None:
            return max_min_fair(self._a, cap, demand, at=self._ft, weight=weight)
        free = self._free_flows
        a_u = (self._a @ self._tie).tocsr()
        d_u = np.concatenate([demand[free], self._stream_demand])
        w_free = np.ones(len(free)) if weight is None else weight[free]
        w_u = np.concatenate([w_free, self.web.weight])
        x = max_min_fair(a_u, cap, d_u, at=a_u.T.tocsr(), weight=w_u)
        self.web_rate = x[len(free) :]
        return self._tie @ x

    def _a_order(self) -> np.ndarray:
        """Permutation from flow-major entries to resource-major (CSR of a) entries."""
        if self._a_perm is None:
            tmp = csr_matrix(
                (np.arange(len(self._entry_base), dtype=float) + 1, self._ft.indices, self._ft.indptr),
                shape=self._ft.shape,
            ).T.tocsr()
            self._a_perm = tmp.data.astype(np.int64) - 1
        return self._a_perm

    def _flow_vm_ends(self) -> tuple[np.ndarray, np.ndarray]:
        if getattr(self, "_ends_n", -1) != len(self.flows):
            self._src_vm = np.array([f.src[1] if f.src[0] == VM else -1 for f in self.flows], dtype=np.int64)
            self._dst_vm = np.array([f.dst[1] if f.dst[0] == VM else -1 for f in self.flows], dtype=np.int64)
            self._ends_n = len(self.flows)
        return self._src_vm, self._dst_vm
