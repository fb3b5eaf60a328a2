"""The simulator: a time-stepped fluid model of a virtualized data center.

Each step of ``dt`` seconds: workloads state their demand; CPU is shared per host by weight (Dom0
included); the network is shared max-min fairly over links, NICs, VF caps and Dom0 CPU; migrations,
services, storage and batch jobs advance; sensor counters and outcome metrics are updated.
Everything a real host would expose goes into counters read by the ``sim`` driver; outcome metrics
(response times, job times, energy) are the experimenter's ground truth and never reach policies.

Work is recomputed only where it changed: routes are rebuilt when a VM moves or changes NIC mode,
and the network is re-solved only when demands, routes or capacities changed.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix

from sova.model.scenario import Scenario, simulator_defaults
from sova.model.topology import build_topology
from sova.sim import datapath, mapreduce, web_service
from sova.sim.compute import weighted_share
from sova.sim.datapath import DOM0, NODE, VM, VM_DOM0, Layout
from sova.sim.maxmin import max_min_fair
from sova.sim.migration import Migration, migration_config
from sova.sim.storage import serve_io
from sova.sim.workloads import Workloads, on_fraction, series_at

RHO_MAX = 0.99
_PER_VM = (VM, VM_DOM0)  # endpoint kinds whose route depends on a VM's host and NIC mode
BITBRAINS_IO_SIZE = 16384.0
MEM_USED_DEFAULT = 0.4


class SimError(Exception):
    """An operation the simulated data center refuses (as a real one would), with the reason."""


@dataclass
class Flow:
    src: tuple[int, int]
    dst: tuple[int, int]
    kind: str
    alive: bool = True


@dataclass
class MigrationRecord:
    vm: str
    src: str
    dst: str
    started: float
    finished: float
    bytes: float
    downtime: float
    rounds: int
    status: str  # completed | not-converged | timed-out | cancelled | unfinished
    moved: bool = False  # the VM runs on dst afterwards (a not-converged migration moves it too)
    throttle: float = 0.0  # the highest auto-converge throttle the guest got
    mode: str = "precopy"  # precopy | postcopy


class Simulator:
    """The data center of one scenario; ``step()`` advances it by one time step."""

    def __init__(self, scenario: Scenario, seed: int | None = None):
        self.scenario = scenario
        self.p = {**simulator_defaults(), **scenario.simulator}
        self.migration_config = migration_config(self.p)
        self.rng = np.random.default_rng(scenario.seed if seed is None else seed)
        self.t = 0.0
        self.dt = scenario.step
        hosts, vms = scenario.hosts, scenario.vms
        self.host_names = [h.name for h in hosts]
        self.vm_names = [v.name for v in vms]
        self.H, self.V = len(hosts), len(vms)
        self.host_cores = np.array([h.cores for h in hosts], dtype=float)
        self.host_mem = np.array([h.memory - h.dom0_memory for h in hosts], dtype=float)
        self.dom0_vcpus = np.array([h.dom0_vcpus for h in hosts], dtype=float)
        self.dom0_weight = np.array([h.dom0_weight for h in hosts], dtype=float)
        self.nic_bw = np.array([h.nic.bandwidth for h in hosts], dtype=float)
        self.max_vfs = np.array([h.nic.max_vfs if h.nic.sriov else 0 for h in hosts], dtype=np.int64)
        self.power_idle = np.array([h.power_idle for h in hosts], dtype=float)
        self.power_max = np.array([h.power_max for h in hosts], dtype=float)
        self.topology = build_topology(scenario.topology, self.host_names, scenario.storage)
        self.storage_names = [s.name for s in scenario.storage]
        self.storage_node = np.array([self.topology.index[f"storage:{s}"] for s in self.storage_names], dtype=np.int64)
        self.st_par = np.array([s.parallelism for s in scenario.storage], dtype=float)
        self.st_access = np.array([s.access_time for s in scenario.storage], dtype=float)
        self.st_bw = np.array([s.bandwidth / 8 for s in scenario.storage], dtype=float)

        hidx, sidx = scenario.host_index(), {n: i for i, n in enumerate(self.storage_names)}
        self.vm_host = np.array([hidx[v.host] for v in vms], dtype=np.int64)
        self.vm_vcpus = np.array([v.vcpus for v in vms], dtype=float)
        self.vm_mem = np.array([v.memory for v in vms], dtype=float)
        self.vm_weight = np.array([v.weight for v in vms], dtype=float)
        self.vm_cap = np.array([v.cap for v in vms], dtype=float)
        self.vm_dirty = np.array([v.dirty_rate for v in vms], dtype=float)
        self.vm_wss = np.array([v.wss * 1024**2 for v in vms], dtype=float)
        self.vm_storage = np.array([sidx.get(v.storage, 0) for v in vms], dtype=np.int64)
        self.vm_vf = np.array([v.nic == "vf" for v in vms], dtype=bool)
        self.vm_vf_rate = np.array([v.vf_rate for v in vms], dtype=float)
        self.vm_net_limit = np.zeros(self.V)
        self.vm_io_limit = np.zeros(self.V)
        self.vm_mem_used = self.vm_mem * MEM_USED_DEFAULT
        self.vf_used = np.bincount(self.vm_host[self.vm_vf], minlength=self.H).astype(np.int64)
        self.vf_pending: list[tuple[float, int, str]] = []  # (due time, vm, 'attach'|'release')
        self.vm_vf_busy = np.zeros(self.V, dtype=bool)  # a hot-plug is in progress
        self.dom0_mem_reserved = np.zeros(self.H)

        self.layout = Layout(self.topology.n_links, self.H, self.V)
        eff = self.p["protocol_efficiency"]
        self.static_cap = np.concatenate([self.topology.link_cap * eff, self.nic_bw * eff, self.nic_bw * eff])
        payload = self.p["packet_payload"]
        self.dom0_cost_bit = self.p["dom0_cost_per_byte"] / 8 + self.p["dom0_cost_per_packet"] / (8 * payload)
        self.guest_cost_bit = self.p["guest_cost_per_byte"] / 8 + self.p["guest_cost_per_packet"] / (8 * payload)
        self.pkt_bits = 8 * payload

        self.workloads = Workloads(scenario, self.rng)
        self.flows: list[Flow] = []
        self._register_workload_flows()
        self.migrations: dict[int, tuple[Migration, int]] = {}
        self.migration_log: list[MigrationRecord] = []
        self.vf_log: list[tuple[float, str, str, str]] = []  # (time, VM, host, 'attached' | 'detached')
        self._routes_dirty = True
        self._route_cache: list[datapath.Route | None] = []
        self._moved_vms: set[int] = set()  # VMs whose host or NIC mode changed since the last routing
        self._last_solve_key: tuple | None = None
        self._last_vm_alloc: np.ndarray | None = None
        self._last_vm_want: np.ndarray | None = None
        self.rate = np.zeros(len(self.flows))
        self._init_counters()

    # ------------------------------------------------------------------ set-up
    def _add_flow(self, src: tuple[int, int], dst: tuple[int, int], kind: str) -> int:
        self.flows.append(Flow(src, dst, kind))
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

    def _init_counters(self) -> None:
        V, H = self.V, self.H
        z = np.zeros
        self.c = {
            "cpu_time": z(V),
            "wait_time": z(V),
            "blocked_time": z(V),
            "vnic_rx_bytes": z(V),
            "vnic_tx_bytes": z(V),
            "vnic_rx_packets": z(V),
            "vnic_tx_packets": z(V),
            "guest_rx_bytes": z(V),
            "guest_tx_bytes": z(V),
            "guest_rx_packets": z(V),
            "guest_tx_packets": z(V),
            "blk_rd_ops": z(V),
            "blk_wr_ops": z(V),
            "blk_rd_bytes": z(V),
            "blk_wr_bytes": z(V),
            "blk_time": z(V),
            "host_cpu_time": z(H),
            "dom0_cpu_time": z(H),
            "nic_rx_bytes": z(H),
            "nic_tx_bytes": z(H),
        }
        self.flow_bytes = np.zeros(len(self.flows))
        self.energy_j = np.zeros(H)
        # last step's gauges, for the recorder
        self.g: dict[str, np.ndarray] = {}

    # ------------------------------------------------------------------ routing
    def _rebuild_routes(self) -> None:
        n_f = len(self.flows)
        rows, cols, coef, d0, cross = [], [], [], [], []
        self.flow_latency = np.zeros(n_f)
        self.flow_src_pv = np.zeros(n_f, dtype=bool)
        self.flow_dst_pv = np.zeros(n_f, dtype=bool)
        self.flow_src_host = np.full(n_f, -1, dtype=np.int64)
        self.flow_dst_host = np.full(n_f, -1, dtype=np.int64)
        self.flow_tx_host = np.full(n_f, -1, dtype=np.int64)
        self.flow_tx_vf = np.zeros(n_f, dtype=bool)
        cache = self._route_cache
        cache.extend([None] * (n_f - len(cache)))
        moved = self._moved_vms
        for f, fl in enumerate(self.flows):
            if not fl.alive:
                cache[f] = None
                continue
            r = cache[f]
            if (
                r is None
                or (fl.src[0] in _PER_VM and fl.src[1] in moved)
                or (fl.dst[0] in _PER_VM and fl.dst[1] in moved)
            ):
                r = datapath.route(
                    self.layout,
                    self.topology,
                    fl.src,
                    fl.dst,
                    self.vm_host,
                    self.vm_vf,
                    self.dom0_cost_bit,
                    self.p["pv_latency"],
                    self.p["vf_latency"],
                    zlib.crc32(f"{fl.src}{fl.dst}{f}".encode()),
                )
                cache[f] = r
            rows.append(r.resources)
            cols.append(np.full(len(r.resources), f, dtype=np.int64))
            coef.append(r.coef)
            d0.append(r.dom0_host)
            cross.append(r.crossings)
            self.flow_latency[f] = r.latency
            self.flow_src_pv[f], self.flow_dst_pv[f] = r.src_pv, r.dst_pv
            self.flow_src_host[f], self.flow_dst_host[f] = r.src_host, r.dst_host
            self.flow_tx_host[f], self.flow_tx_vf[f] = r.tx_host, r.tx_vf
        cat = lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dtype=dt)  # noqa: E731
        rows_a, cols_a = cat(rows, np.int64), cat(cols, np.int64)
        coef_a, d0_a, cross_a = cat(coef, float), cat(d0, np.int64), cat(cross, np.int64)
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

    # ------------------------------------------------------------------ step
    def step(self) -> None:
        """Advance the data center by one time step."""
        t, dt, p = self.t, self.dt, self.p
        w = self.workloads
        w.apply_phases(t)
        self._process_vf_ops(t)
        if len(self.rate) != len(self.flows):
            self.rate = np.resize(self.rate, len(self.flows))
            self.flow_bytes = np.resize(self.flow_bytes, len(self.flows))
        if self._routes_dirty:
            self._rebuild_routes()
        paused = self._paused_fraction()
        run = 1.0 - paused

        cpu_dem = np.full(self.V, p["idle_guest_cpu"])
        demand = np.zeros(len(self.flows))
        self._flow_scale = np.ones(len(self.flows))
        self._workload_demands(t, dt, cpu_dem, demand, run)
        io = self._io_demands(t)
        for _mig, fid in self.migrations.values():
            demand[fid] = p["migration_bandwidth"] or np.inf
        # storage device first: what the device serves is what crosses the network
        served_iops, io_latency = self._serve_storage(io, demand)

        # Dom0 vif overhead: extra cost per additional active para-virtual NIC on the host
        active = demand > 0
        src_vm, dst_vm = self._flow_vm_ends()
        pv_vm_active = np.zeros(self.V, dtype=bool)
        pv_vm_active[src_vm[active & self.flow_src_pv]] = True
        pv_vm_active[dst_vm[active & self.flow_dst_pv]] = True
        n_vifs = np.bincount(self.vm_host[pv_vm_active], minlength=self.H)
        vif_factor = 1.0 + p["dom0_vif_overhead"] * np.maximum(n_vifs - 1, 0)
        data = self._entry_base * np.where(self._entry_dom0 >= 0, vif_factor[np.maximum(self._entry_dom0, 0)], 1.0)

        # CPU pass 1: the CPU Dom0 could get for forwarding, with guests asking for their offered load
        nic_cap = self.nic_bw * p["protocol_efficiency"]
        offered = self._offered(demand, active, nic_cap)
        guest_net = self._guest_net_cpu(offered)
        vm_dem = np.minimum(cpu_dem + guest_net, self._vm_cpu_limit())
        _, dom0_alloc = self._share_cpu(vm_dem, self.dom0_vcpus)

        # network
        cap = self._capacities(dom0_alloc)
        key = (demand.tobytes(), cap.tobytes(), data.tobytes())  # weights follow from demand and routes
        if key != self._last_solve_key:
            self._a.data[:] = data[self._a_order()]
            self._ft.data[:] = data
            weight = datapath.arbitration_weights(active, self.flow_tx_host, self.flow_tx_vf, self.H)
            self.rate = self._solve(cap, demand, weight)
            self._last_solve_key = key
        rate = self.rate * self._flow_scale
        load = self._load(rate, data)

        # CPU pass 2: with what the network actually carried
        vm_want = cpu_dem + self._guest_net_cpu(rate)  # before the vCPU count and cap bound it
        vm_dem = np.minimum(vm_want, self._vm_cpu_limit())
        dom0_used = np.minimum(self._dom0_cpu(rate, data), self.dom0_vcpus)
        vm_alloc, dom0_alloc = self._share_cpu(vm_dem, dom0_used)
        stretch = self._stretch(vm_dem)

        # a stop-and-copy during this step pauses the VM for exactly its part of the step
        run_now = self._advance_migrations(rate, dt, run)
        vm_alloc = vm_alloc * (run_now / np.maximum(run, 1e-12))
        self._advance_batch(vm_alloc, vm_want, stretch, dt, run_now)
        self._advance_jobs(vm_alloc, vm_want, stretch, rate, dt, run_now)
        self._advance_transfers(rate, dt)
        self._last_vm_alloc, self._last_vm_want = vm_alloc, vm_want
        if self.web:
            self.g["web_rps"] = np.bincount(self.web.row, weights=self.web_rate, minlength=len(w.group("web")))
        self._advance_services(rate, load, cap, vm_alloc, vm_want, stretch, dt, run_now)
        self._account(rate, vm_alloc, vm_dem, dom0_alloc, stretch, served_iops, io, io_latency, dt)
        self.g["link_util"] = load[: self.layout.n_links] / np.maximum(cap[: self.layout.n_links], 1e-300)
        self.g["nic_tx_util"] = load[self.layout.nic_tx : self.layout.nic_rx] / np.maximum(nic_cap, 1e-300)
        self.g["nic_rx_util"] = load[self.layout.nic_rx : self.layout.dom0] / np.maximum(nic_cap, 1e-300)
        self.t = t + dt

    def _a_order(self) -> np.ndarray:
        """Permutation from flow-major entries to resource-major (CSR of a) entries."""
        if self._a_perm is None:
            tmp = csr_matrix(
                (np.arange(len(self._entry_base), dtype=float) + 1, self._ft.indices, self._ft.indptr),
                shape=self._ft.shape,
            ).T.tocsr()
            self._a_perm = tmp.data.astype(np.int64) - 1
        return self._a_perm

    def _offered(self, demand: np.ndarray, active: np.ndarray, nic_cap: np.ndarray) -> np.ndarray:
        """Demand bounded by an even share of the NICs at its ends: the load CPU pass 1 plans for."""
        hs, hd = self.flow_src_host, self.flow_dst_host
        n = np.bincount(hs[active & (hs >= 0)], minlength=self.H) + np.bincount(
            hd[active & (hd >= 0)], minlength=self.H
        )
        share = nic_cap / np.maximum(n, 1)
        cap = np.minimum(
            np.where(hs >= 0, share[np.maximum(hs, 0)], np.inf), np.where(hd >= 0, share[np.maximum(hd, 0)], np.inf)
        )
        return np.minimum(demand, cap)

    def _vm_cpu_limit(self) -> np.ndarray:
        lim = self.vm_vcpus.copy()
        capped = self.vm_cap > 0
        lim[capped] = np.minimum(lim[capped], self.vm_cap[capped])
        return lim

    def _share_cpu(self, vm_dem: np.ndarray, dom0_dem: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        group = np.concatenate([self.vm_host, np.arange(self.H)])
        dem = np.concatenate([vm_dem, dom0_dem])
        wt = np.concatenate([self.vm_weight, self.dom0_weight])
        alloc = weighted_share(group, dem, wt, self.host_cores)
        return alloc[: self.V], alloc[self.V :]

    def _stretch(self, vm_dem: np.ndarray) -> np.ndarray:
        """Run-queue slowdown of work per host: 1 + k * max(0, runnable vCPUs / threads - 1)."""
        busy = vm_dem > 2 * self.p["idle_guest_cpu"]
        runnable = np.bincount(self.vm_host[busy], weights=self.vm_vcpus[busy], minlength=self.H)
        return 1.0 + self.p["sched_overhead"] * np.maximum(runnable / self.host_cores - 1.0, 0.0)

    def _capacities(self, dom0_alloc: np.ndarray) -> np.ndarray:
        vf = np.where(self.vm_vf & (self.vm_vf_rate > 0), self.vm_vf_rate * self.p["protocol_efficiency"], np.inf)
        lim = np.where(self.vm_net_limit > 0, self.vm_net_limit, np.inf)
        return np.concatenate([self.static_cap, dom0_alloc, vf, lim])

    def _load(self, rate: np.ndarray, data: np.ndarray) -> np.ndarray:
        return np.bincount(self._entry_res, weights=data * rate[self._entry_flow], minlength=self.layout.size)

    def _dom0_cpu(self, rate: np.ndarray, data: np.ndarray) -> np.ndarray:
        sel = self._entry_dom0 >= 0
        return np.bincount(self._entry_dom0[sel], weights=data[sel] * rate[self._entry_flow[sel]], minlength=self.H)

    def _guest_net_cpu(self, rate: np.ndarray) -> np.ndarray:
        """Guest CPU for its own network stack, at each VM end of each flow."""
        out = np.zeros(self.V)
        if not len(rate):
            return out
        src_vm, dst_vm = self._flow_vm_ends()
        r = np.where(np.isfinite(rate), rate, 0.0) * self.guest_cost_bit
        s, d = src_vm >= 0, dst_vm >= 0
        out += np.bincount(src_vm[s], weights=r[s], minlength=self.V)
        out += np.bincount(dst_vm[d], weights=r[d], minlength=self.V)
        return out

    def _flow_vm_ends(self) -> tuple[np.ndarray, np.ndarray]:
        if getattr(self, "_ends_n", -1) != len(self.flows):
            self._src_vm = np.array([f.src[1] if f.src[0] == VM else -1 for f in self.flows], dtype=np.int64)
            self._dst_vm = np.array([f.dst[1] if f.dst[0] == VM else -1 for f in self.flows], dtype=np.int64)
            self._ends_n = len(self.flows)
        return self._src_vm, self._dst_vm

    # ------------------------------------------------------------------ workloads
    def _paused_fraction(self) -> np.ndarray:
        """Fraction of the coming step each VM does not run: paused by a stop-and-copy under way, or its
        vCPUs throttled by auto-converge."""
        out = np.zeros(self.V)
        for v, (mig, _) in self.migrations.items():
            paused = min(1.0, mig.pause_left() / self.dt)
            out[v] = paused + (1.0 - paused) * mig.throttle
        return out

    def _workload_demands(self, t, dt, cpu_dem, demand, run) -> None:
        """Fill CPU demand per VM and flow demands for the step [t, t + dt)."""
        w = self.workloads
        if (g := w.group("lookbusy")) is not None:
            on = on_fraction(t, dt, g.params["period"], g.params["duty"], g.phase)
            np.add.at(cpu_dem, g.vm, on * g.params["util"] * self.vm_vcpus[g.vm])
        if (g := w.group("netperf")) is not None:
            on = on_fraction(t, dt, g.params["period"], g.params["duty"], g.phase)
            rate = np.where(g.params["rate"] > 0, g.params["rate"], np.inf)
            demand[g.flows["main"]] = np.where(on > 0, rate, 0.0)
            self._flow_scale[g.flows["main"]] = on  # on for part of the step: carries that part
        if (g := w.group("httperf")) is not None:
            lam = g.params["rate"] + g.state["backlog"] / 1.0
            demand[g.flows["response"]] = lam * g.params["page"] * 8
            demand[g.flows["request"]] = lam * g.params["request"] * 8
            np.add.at(cpu_dem, g.vm, lam * g.params["cpu_per_request"])
            client = g.params["client"]
            has = client >= 0
            np.add.at(cpu_dem, client[has].astype(np.int64), lam[has] * 20e-6)
        if (g := w.group("transfer")) is not None:
            running = (t + dt > g.params["start"]) & ~g.state["done"]
            # the cipher runs on the sender's CPU: what it got last step bounds how fast it can send
            cost_bit = g.params["cpu_per_byte"] / 8 + self.guest_cost_bit
            cpu = self._last_vm_alloc[g.vm] if self._last_vm_alloc is not None else self.vm_vcpus[g.vm]
            cpu_bound = np.where(g.params["cpu_per_byte"] > 0, np.maximum(cpu, 0.05) / cost_bit, np.inf)
            demand[g.flows["main"]] = np.where(running, cpu_bound, 0.0)
            offered = np.minimum(cpu_bound, self.nic_bw[self.vm_host[g.vm]])
            np.add.at(cpu_dem, g.vm, np.where(running, offered * g.params["cpu_per_byte"] / 8, 0.0))
        if (g := w.group("batch")) is not None:
            cores = np.where(g.params["cores"] > 0, g.params["cores"], self.vm_vcpus[g.vm])
            running = g.state["think_left"] <= 0
            np.add.at(cpu_dem, g.vm, np.where(running, np.minimum(cores, self.vm_vcpus[g.vm]), 0.0))
        if (g := w.group("mapreduce")) is not None:
            cpu, net = mapreduce.demands(g, self.jobs, self.vm_vcpus, dt)
            np.add.at(cpu_dem, g.vm, cpu)
            demand[self.jobs.flow] = net
        if (g := w.group("planetlab")) is not None:
            cpu = np.clip(series_at(g, "cpu", t) * g.params["scale"], 0, 1)
            np.add.at(cpu_dem, g.vm, cpu * self.vm_vcpus[g.vm])
        if (g := w.group("bitbrains")) is not None:
            s = g.params["scale"]
            np.add.at(cpu_dem, g.vm, np.clip(series_at(g, "cpu", t) * s, 0, 1) * self.vm_vcpus[g.vm])
            demand[g.flows["tx"]] = series_at(g, "net_tx", t) * 8 * s
            demand[g.flows["rx"]] = series_at(g, "net_rx", t) * 8 * s
            self.vm_mem_used[g.vm] = np.minimum(series_at(g, "mem_used", t), self.vm_mem[g.vm])
        src_vm, dst_vm = self._flow_vm_ends()
        ends_run = np.where(src_vm >= 0, run[np.maximum(src_vm, 0)], 1.0) * np.where(
            dst_vm >= 0, run[np.maximum(dst_vm, 0)], 1.0
        )
        if (g := w.group("web")) is not None:
            self._web_demands(g, cpu_dem, demand, ends_run)
        np.multiply(cpu_dem, run, out=cpu_dem)
        # a paused end stops the flow; an unlimited stream's demand is inf, and inf * 0 would be NaN
        np.multiply(demand, ends_run, out=demand, where=ends_run > 0)
        demand[ends_run <= 0] = 0.0

    def _web_demands(self, g, cpu_dem, demand, ends_run) -> None:
        """Each stream's demand (requests/s), stopped while any VM it crosses is paused; its flows' share."""
        st = self.web
        share = np.ones(self.V)
        if self._last_vm_alloc is not None:
            want = np.maximum(self._last_vm_want, 1e-300)
            share = np.where(self._last_vm_want > 0, np.minimum(self._last_vm_alloc / want, 1.0), 1.0)
        room = np.maximum(self._vm_cpu_limit() - cpu_dem, 0.0) * share
        d = web_service.stream_demand(g, st, self.flow_latency, room, self.web_rate)
        stop = np.ones(len(st))
        np.minimum.at(stop, st.tie_stream, ends_run[st.tie_flow])
        self._stream_demand = d * stop
        cpu_dem += web_service.cpu_demand(g, st, self.web_rate, self.V)
        np.add.at(demand, st.tie_flow, np.where(np.isfinite(d), d, 0.0)[st.tie_stream] * st.tie_bits)

    def _io_demands(self, t: float) -> dict[str, np.ndarray]:
        """Per-VM IO streams: IOPS (capped by the VM's IO limit), size and read fraction."""
        w = self.workloads
        vm, iops, size, read = [], [], [], []
        if (g := w.group("fio")) is not None:
            vm.append(g.vm)
            iops.append(g.params["iops"])
            size.append(g.params["size"])
            read.append(g.params["read"])
        if (g := w.group("bitbrains")) is not None:
            s = g.params["scale"]
            rd, wr = series_at(g, "disk_read", t) * s, series_at(g, "disk_write", t) * s
            vm.append(g.vm)
            iops.append((rd + wr) / BITBRAINS_IO_SIZE)
            size.append(np.full(len(g), BITBRAINS_IO_SIZE))
            read.append(np.where(rd + wr > 0, rd / np.maximum(rd + wr, 1e-300), 0.5))
        if not vm:
            e = np.zeros(0)
            return {"vm": e.astype(np.int64), "iops": e, "size": e, "read": e}
        out = {
            "vm": np.concatenate(vm),
            "iops": np.concatenate(iops),
            "size": np.concatenate(size),
            "read": np.concatenate(read),
        }
        lim = self.vm_io_limit[out["vm"]]
        out["iops"] = np.where(lim > 0, np.minimum(out["iops"], lim), out["iops"])
        return out

    def _serve_storage(self, io: dict[str, np.ndarray], demand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not len(io["vm"]):
            return np.zeros(0), np.zeros(0)
        served, latency, rho = serve_io(
            self.vm_storage[io["vm"]], io["iops"], io["size"], self.st_par, self.st_access, self.st_bw
        )
        self.g["storage_util"] = rho
        bytes_s = served * io["size"]
        rd = np.bincount(io["vm"], weights=bytes_s * io["read"], minlength=self.V)
        wr = np.bincount(io["vm"], weights=bytes_s * (1 - io["read"]), minlength=self.V)
        has = self.io_flow_read >= 0
        demand[self.io_flow_read[has]] = rd[has] * 8
        demand[self.io_flow_write[has]] = wr[has] * 8
        return served, latency

    # ------------------------------------------------------------------ progress
    def _advance_migrations(self, rate: np.ndarray, dt: float, run: np.ndarray) -> np.ndarray:
        """Advance every migration; returns each VM's running fraction of this step (pauses included)."""
        run_now = run.copy()
        for v in list(self.migrations):
            mig, fid = self.migrations[v]
            sent, paused = mig.advance(rate[fid] / 8, dt)
            self.flow_bytes[fid] += sent
            run_now[v] = min(run[v], (1.0 - paused / dt) * (1.0 - mig.throttle))
            if mig.on_destination and self.vm_host[v] != mig.dst:  # post-copy: the guest runs there now
                self._move(v, mig.dst)
            if mig.done:
                self._finish_migration(v, mig.status)
        return run_now

    def _move(self, vm: int, dst: int) -> None:
        self.vm_host[vm] = dst
        self._moved_vms.add(vm)

    def _advance_batch(self, vm_alloc, vm_dem, stretch, dt, run) -> None:
        g = self.workloads.group("batch")
        if g is None:
            return
        cores = np.minimum(np.where(g.params["cores"] > 0, g.params["cores"], self.vm_vcpus[g.vm]), self.vm_vcpus[g.vm])
        share = np.where(vm_dem[g.vm] > 0, vm_alloc[g.vm] / np.maximum(vm_dem[g.vm], 1e-300), 0.0)
        thinking = g.state["think_left"] > 0
        progress = np.where(
            thinking, 0.0, cores * np.minimum(share, 1.0) / stretch[self.vm_host[g.vm]] * dt * run[g.vm]
        )
        g.state["think_left"] = np.maximum(g.state["think_left"] - dt, 0.0)
        g.state["left"] -= progress
        done = (g.state["left"] <= 0) & ~thinking
        if done.any():
            # finishing time inside the step, by linear interpolation
            over = -g.state["left"][done] / np.maximum(progress[done], 1e-300) * dt
            finish = self.t + dt - over
            self.g.setdefault("batch_done", [])
            for i, f in zip(np.flatnonzero(done), finish, strict=True):
                self.g["batch_done"].append((int(i), float(f - g.state["started"][i])))
            g.state["started"][done] = finish + g.params["think"][done]
            g.state["left"][done] = g.params["work"][done]
            g.state["think_left"][done] = g.params["think"][done]

    def _advance_jobs(self, vm_alloc, vm_want, stretch, rate, dt, run) -> None:
        g = self.workloads.group("mapreduce")
        if g is None:
            return
        share = np.where(vm_want[g.vm] > 0, vm_alloc[g.vm] / np.maximum(vm_want[g.vm], 1e-300), 0.0)
        speed = mapreduce.cores(g, self.vm_vcpus) * np.minimum(share, 1.0) / stretch[self.vm_host[g.vm]] * run[g.vm]
        done = mapreduce.advance(g, self.jobs, speed, rate[self.jobs.flow], self.t, dt)
        if done:
            self.g.setdefault("jobs_done", []).extend(done)

    def _advance_transfers(self, rate: np.ndarray, dt: float) -> None:
        g = self.workloads.group("transfer")
        if g is None:
            return
        flows = g.flows["main"]
        moved = rate[flows] * dt / 8
        before = g.state["sent"].copy()
        g.state["sent"] = np.minimum(before + moved, g.params["size"])
        finished = ~g.state["done"] & (g.state["sent"] >= g.params["size"] * (1 - 1e-12))
        for i in np.flatnonzero(finished):
            frac = (g.params["size"][i] - before[i]) / max(moved[i], 1e-300)  # of the step, to the last byte
            rate[flows[i]] *= frac  # the copy stops at its last byte: nothing is counted after it
            self.g.setdefault("transfer_done", []).append((int(i), float(self.t + frac * dt - g.params["start"][i])))
        g.state["done"] |= finished

    def _advance_services(self, rate, load, cap, vm_alloc, vm_dem, stretch, dt, run) -> None:
        g = self.workloads.group("httperf")
        if g is None:
            return
        lam, page, cpr = g.params["rate"], g.params["page"], g.params["cpu_per_request"]
        bits = page * 8
        backlog = g.state["backlog"]
        resp = g.flows["response"]
        # capacity: network (what the response flow carried) and server CPU
        offered = lam + backlog / 1.0
        mu_net = np.where(offered > 0, rate[resp] / np.maximum(bits, 1e-300), np.inf)
        mu_net = np.where(rate[resp] >= (offered * bits) * (1 - 1e-9), np.inf, mu_net)
        vm = g.vm
        cpu_short = vm_dem[vm] > vm_alloc[vm] * (1 + 1e-9)
        share = np.where(cpu_short, vm_alloc[vm] / np.maximum(vm_dem[vm], 1e-300), 1.0)
        mu_cpu = np.where(cpr > 0, share * offered, np.inf)
        mu_cpu = np.where(cpu_short, mu_cpu, np.inf)
        mu = np.minimum(mu_net, mu_cpu) * run[vm]
        arrivals = lam * dt
        want = backlog + arrivals
        served = np.minimum(want, mu * dt)
        left = want - served
        limit = np.where(np.isfinite(mu), mu * g.params["timeout"], np.inf)
        dropped = np.maximum(left - limit, 0.0)
        new_backlog = left - dropped
        # time per request: server CPU (PS), transfer (bottleneck stage, PS), fixed latencies, queue
        rho_v = np.minimum(np.where(cpu_short, 1.0, vm_dem[vm] / self.vm_vcpus[vm]), RHO_MAX)
        t_cpu = cpr * stretch[self.vm_host[vm]] / (1 - rho_v)
        t_xfer, t_min = self._transfer_times(resp, bits, load, cap)
        fixed = self.flow_latency[resp] + self.flow_latency[g.flows["request"]]
        queue = np.where(np.isfinite(mu) & (mu > 0), backlog / np.maximum(mu, 1e-300), 0.0)
        mean = t_cpu + t_xfer + fixed + queue
        floor = cpr + t_min + fixed
        g.state["backlog"] = new_backlog
        self.g["svc"] = {
            "served": served,
            "arrivals": arrivals,
            "dropped": dropped,
            "mean": mean,
            "floor": floor,
        }

    def _transfer_times(self, flows, bits, load, cap) -> tuple[np.ndarray, np.ndarray]:
        """Per flow, the slowest pipeline stage for one message of `bits`, loaded and unloaded (M/G/1-PS)."""
        ptr = self._ft.indptr
        starts, ends = ptr[flows], ptr[flows + 1]
        counts = ends - starts
        idx = np.arange(counts.sum()) + np.repeat(starts - (np.cumsum(counts) - counts), counts)
        owner = np.repeat(np.arange(len(flows)), counts)
        res = self._entry_res[idx]
        rho = np.minimum(load[res] / np.maximum(cap[res], 1e-300), RHO_MAX)
        rho = np.where(np.isfinite(cap[res]), rho, 0.0)
        is_cpu = self._entry_dom0[idx] >= 0
        per_cross = self._ft.data[idx] / self._entry_cross[idx]
        speed = np.where(is_cpu, 1.0, cap[res])
        work = np.where(is_cpu, per_cross * bits[owner], bits[owner])
        # rate limiters (VF tiers, vNIC limits) are token buckets: a message within the bucket's burst
        # leaves at line rate; the bucket holds less as the limiter fills up
        limiter = res >= self.layout.vf
        burst = self.p["rate_limit_burst"] * 8 * (1 - rho)
        work = np.where(limiter, np.maximum(work - burst, 0.0), work)
        base = np.where(np.isfinite(speed), work / np.maximum(speed, 1e-300), 0.0)
        loaded = base / (1 - rho)
        t_load = np.zeros(len(flows))
        t_min = np.zeros(len(flows))
        np.maximum.at(t_load, owner, loaded)
        np.maximum.at(t_min, owner, base)
        return t_load, t_min

    # ------------------------------------------------------------------ accounting
    def _account(self, rate, vm_alloc, vm_dem, dom0_alloc, stretch, served_iops, io, io_latency, dt) -> None:
        c = self.c
        got = vm_alloc * dt
        want = np.minimum(vm_dem, self.vm_vcpus)
        wait = np.minimum((want - vm_alloc) * dt + got * (stretch[self.vm_host] - 1), self.vm_vcpus * dt - got)
        c["cpu_time"] += got
        c["wait_time"] += wait
        c["blocked_time"] += np.maximum(self.vm_vcpus * dt - got - wait, 0.0)
        nbytes = np.where(np.isfinite(rate), rate, 0.0) * dt / 8
        self.flow_bytes += nbytes
        src_vm, dst_vm = self._flow_vm_ends()
        pk = self.pkt_bits / 8
        for end, pv, key in ((src_vm, self.flow_src_pv, "tx"), (dst_vm, self.flow_dst_pv, "rx")):
            m = end >= 0
            c[f"guest_{key}_bytes"] += np.bincount(end[m], weights=nbytes[m], minlength=self.V)
            m2 = m & pv
            c[f"vnic_{key}_bytes"] += np.bincount(end[m2], weights=nbytes[m2], minlength=self.V)
            # whole packets, counted from the cumulative bytes so rounding never accumulates
            for path in ("guest", "vnic"):
                c[f"{path}_{key}_packets"] = np.ceil(c[f"{path}_{key}_bytes"] / pk - 1e-6)
        lay = self.layout
        load_bytes = np.bincount(self._entry_res, weights=nbytes[self._entry_flow], minlength=lay.size)
        c["nic_tx_bytes"] += load_bytes[lay.nic_tx : lay.nic_rx]
        c["nic_rx_bytes"] += load_bytes[lay.nic_rx : lay.dom0]
        host_busy = np.bincount(self.vm_host, weights=vm_alloc, minlength=self.H) + dom0_alloc
        c["host_cpu_time"] += host_busy * dt
        c["dom0_cpu_time"] += dom0_alloc * dt
        if len(served_iops):
            vm = io["vm"]
            ops = served_iops * dt
            c["blk_rd_ops"] += np.bincount(vm, weights=ops * io["read"], minlength=self.V)
            c["blk_wr_ops"] += np.bincount(vm, weights=ops * (1 - io["read"]), minlength=self.V)
            c["blk_rd_bytes"] += np.bincount(vm, weights=ops * io["read"] * io["size"], minlength=self.V)
            c["blk_wr_bytes"] += np.bincount(vm, weights=ops * (1 - io["read"]) * io["size"], minlength=self.V)
            c["blk_time"] += np.bincount(vm, weights=ops * io_latency, minlength=self.V)
            self.g["io"] = {"vm": vm, "served": served_iops, "offered": io["iops"], "latency": io_latency}
        util = host_busy / self.host_cores
        power = self.power_idle + (self.power_max - self.power_idle) * np.minimum(util, 1.0)
        self.energy_j += power * dt
        self.g.update(
            host_util=util, dom0_alloc=dom0_alloc, vm_alloc=vm_alloc, vm_demand=vm_dem, power=power, rate=rate
        )

    # ------------------------------------------------------------------ operations (the driver calls these)
    def host_mem_used(self) -> np.ndarray:
        return np.bincount(self.vm_host, weights=self.vm_mem, minlength=self.H) + self.dom0_mem_reserved

    def start_migration(self, vm: int, dst: int) -> None:
        """Begin a live migration; refuses what a hypervisor would refuse."""
        src = int(self.vm_host[vm])
        name = self.vm_names[vm]
        if vm in self.migrations:
            raise SimError(f"{name} is already migrating")
        if dst == src:
            raise SimError(f"{name} already runs on {self.host_names[dst]}")
        if self.vm_vf[vm] or self.vm_vf_busy[vm]:
            raise SimError(f"{name} has an SR-IOV VF attached; detach it before migrating")
        free = self.host_mem[dst] - self.host_mem_used()[dst]
        if free < self.vm_mem[vm]:
            raise SimError(f"{self.host_names[dst]} has {free:.0f} MiB free, {name} needs {self.vm_mem[vm]:.0f} MiB")
        mig = Migration(
            vm=vm,
            src=src,
            dst=dst,
            memory=self.vm_mem[vm] * 1024**2,
            dirty_rate=self.vm_dirty[vm],
            wss=self.vm_wss[vm],
            started=self.t,
            config=self.migration_config,
        )
        fid = self._add_flow((DOM0, src), (DOM0, dst), "migration")
        self.dom0_mem_reserved[dst] += self.vm_mem[vm]
        self.migrations[vm] = (mig, fid)

    def cancel_migration(self, vm: int, reason: str = "cancelled") -> bool:
        """Stop a migration; the VM stays on its source. False in post-copy, which cannot be undone (the
        guest runs on the destination and its memory is in two places): it runs to its end."""
        if vm not in self.migrations or self.migrations[vm][0].on_destination:
            return False
        self._finish_migration(vm, reason)
        return True

    def _finish_migration(self, vm: int, status: str) -> None:
        mig, fid = self.migrations.pop(vm)
        self.flows[fid].alive = False
        self._routes_dirty = True
        self.dom0_mem_reserved[mig.dst] -= self.vm_mem[vm]
        moved = mig.on_destination
        if moved and self.vm_host[vm] != mig.dst:
            self._move(vm, mig.dst)
        self.migration_log.append(
            MigrationRecord(
                vm=self.vm_names[vm],
                src=self.host_names[mig.src],
                dst=self.host_names[mig.dst],
                started=mig.started,
                finished=mig.started + mig.elapsed,  # within the step, not rounded to it
                bytes=mig.sent,
                downtime=mig.downtime if moved else 0.0,
                rounds=mig.round,
                status=status,
                moved=moved,
                throttle=mig.throttle,
                mode=mig.mode,
            )
        )

    def migration_state(self, vm: int) -> str:
        """'running' while in flight, else the status of its last migration ('completed', ...), or 'none'."""
        if vm in self.migrations:
            return "running"
        name = self.vm_names[vm]
        for rec in reversed(self.migration_log):
            if rec.vm == name:
                return rec.status
        return "none"

    def attach_vf(self, vm: int, rate: float) -> None:
        h = int(self.vm_host[vm])
        name = self.vm_names[vm]
        if vm in self.migrations:
            raise SimError(f"{name} is migrating; a VF cannot be attached now")
        if self.vm_vf[vm] or self.vm_vf_busy[vm]:
            raise SimError(f"{name} already has a VF (or one is being plugged)")
        if self.vf_used[h] >= self.max_vfs[h]:
            raise SimError(f"{self.host_names[h]} has no free VF ({self.max_vfs[h]} in use)")
        self.vf_used[h] += 1
        self.vm_vf_busy[vm] = True
        self.vm_vf_rate[vm] = rate
        self.vf_pending.append((self.t + self.p["vf_attach_time"], vm, "attach"))

    def detach_vf(self, vm: int) -> None:
        """Traffic fails over to the para-virtual standby at once; the VF is free after the unplug."""
        if not self.vm_vf[vm]:
            raise SimError(f"{self.vm_names[vm]} has no VF attached")
        self.vm_vf[vm] = False
        self.vm_vf_busy[vm] = True
        self._routes_dirty = True
        self._moved_vms.add(vm)
        self.vf_log.append((self.t, self.vm_names[vm], self.host_names[self.vm_host[vm]], "detached"))
        self.vf_pending.append((self.t + self.p["vf_detach_time"], vm, "release"))

    def set_vf_rate(self, vm: int, rate: float) -> None:
        if not self.vm_vf[vm]:
            raise SimError(f"{self.vm_names[vm]} has no VF attached")
        self.vm_vf_rate[vm] = rate

    def _process_vf_ops(self, t: float) -> None:
        due = [op for op in self.vf_pending if op[0] <= t + 1e-9]
        if not due:
            return
        self.vf_pending = [op for op in self.vf_pending if op[0] > t + 1e-9]
        for _, vm, kind in due:
            self.vm_vf_busy[vm] = False
            if kind == "attach":
                self.vm_vf[vm] = True
                self._moved_vms.add(vm)
                self._routes_dirty = True
                self.vf_log.append((t, self.vm_names[vm], self.host_names[self.vm_host[vm]], "attached"))
            else:
                self.vf_used[self.vm_host[vm]] -= 1

    def vf_state(self, vm: int) -> str:
        """'none', 'attaching', 'attached' or 'detaching' (the VF is unplugging, traffic is on the vNIC)."""
        for _, v, kind in self.vf_pending:
            if v == vm:
                return "attaching" if kind == "attach" else "detaching"
        return "attached" if self.vm_vf[vm] else "none"
