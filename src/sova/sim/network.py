"""The network: flows and their routes, the incidence of every live flow on links, NICs, Dom0 CPU, VF
caps and rate limits (rebuilt only for flows whose VM moved), and the max-min fair solve over it.

A subsystem of ``Simulator`` (sim/engine.py) that owns its state: the flows, their routes and rates, the
fixed capacities (links and NICs), which NICs are up, and each VM's egress limit. A down NIC (its port to
the fabric) carries nothing, both ways, VF traffic included: the host's VMs are cut off from every other
host and the outside, while traffic between VMs on the host goes on. It reads
where each VM runs and its NIC mode (sim/vm_inventory.py) and each VF's rate cap (sim/sriov_vfs.py). The
engine asks it, within a step, what the network offers, costs and carries.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
from scipy.sparse import csr_matrix

from sova.model.scenario import HostSpec
from sova.model.topology import Topology
from sova.sim import datapath
from sova.sim.datapath import NODE, VM, VM_DOM0, Layout
from sova.sim.maxmin import max_min_fair
from sova.sim.records import Flow, SimError
from sova.sim.sriov_vfs import SriovVfs
from sova.sim.vm_inventory import VmInventory
from sova.sim.web_sharing import share_per_connection
from sova.sim.workloads import Workloads

RHO_MAX = 0.99  # utilisation cap in the queueing formulas (a saturated resource serves at 1 / (1 - 0.99))
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


class Network:
    """Flows, their routes and rates, and the max-min fair solve."""

    def __init__(
        self,
        topology: Topology,
        hosts: Sequence[HostSpec],
        host_xen: np.ndarray,
        vms: VmInventory,
        vfs: SriovVfs,
        workloads: Workloads,
        params: dict,
    ):
        """host_xen: per host, it runs Xen; params: the simulator's."""
        self.topology, self.host_xen = topology, host_xen
        self.host_names = [h.name for h in hosts]
        self.nic_bw = np.array([h.nic.bandwidth for h in hosts], dtype=float)  # bit/s of each host's NIC
        self.vms, self.vfs, self.workloads, self.params = vms, vfs, workloads, params
        self.n_hosts, self.n_vms = len(hosts), len(vms.host)
        self.layout = Layout(topology.n_links, self.n_hosts, self.n_vms)
        efficiency = params["protocol_efficiency"]
        self.nic_cap = self.nic_bw * efficiency  # bit/s a NIC carries when up
        self.nic_up = np.ones(self.n_hosts, dtype=bool)
        self.static_cap = np.concatenate([topology.link_cap * efficiency, self.nic_cap, self.nic_cap])
        self.vm_net_limit = np.zeros(self.n_vms)
        payload = params["packet_payload"]
        self.dom0_cost_bit = params["dom0_cost_per_byte"] / 8 + params["dom0_cost_per_packet"] / (8 * payload)
        self.guest_cost_bit = params["guest_cost_per_byte"] / 8 + params["guest_cost_per_packet"] / (8 * payload)
        self.pkt_bits = 8 * payload
        self.flows: list[Flow] = []
        self._src_vm = self._dst_vm = np.zeros(0, dtype=np.int64)  # each flow's end VMs (flow_vm_ends)
        self._ends_n = 0  # flows whose ends are in them
        self._flow_end_vms: list[int] = []  # two per flow, for re-routing the flows of VMs that moved
        self.web_rate = np.zeros(0)  # requests/s of each web stream, last step (the web kind sizes it)
        self.stream_demand = np.zeros(0)  # requests/s each web stream's CPUs allow this step (the web kind's)
        self.stream_base = np.zeros(0)  # s of each web stream's request outside transfer (the web kind's)
        self.web_transfer = np.zeros(0)  # s of each web stream's request in transfer, last solve
        self.web_sending = np.zeros(0)  # per web T entry: connections sending on its flow, last solve
        self.io_flow_read = np.full(self.n_vms, -1, dtype=np.int64)  # each VM's storage streams' flows
        self.io_flow_write = np.full(self.n_vms, -1, dtype=np.int64)
        self._route_cache: list[datapath.Route | None] = []
        self._indptr = np.zeros(1, dtype=np.int64)  # each flow's entries in the _entry_* arrays (CSR by flow)
        self._entry_res = self._entry_dom0 = self._entry_cross = np.zeros(0, dtype=np.int64)
        self._entry_base = np.zeros(0)
        self._alone, self._alone_key = np.zeros(0), None  # alone(): each flow's rate on its path alone
        self._layouts = 0  # entry layouts made so far (a new one: routes changed)
        self._last_solve_key: tuple | None = None
        self.rate = np.zeros(0)  # bit/s each flow carried in the last solve

    @property
    def web(self):
        """The web streams (sim/workload_kinds/web.py) if the scenario has web workloads, else None."""
        group = self.workloads.group("web")
        return group.model if group is not None else None

    def nic_down(self, host: int) -> None:
        """The host's port stops carrying traffic."""
        if not self.nic_up[host]:
            raise SimError(f"{self.host_names[host]}'s NIC is down already")
        self._set_nic(host, up=False)

    def nic_up_again(self, host: int) -> None:
        if self.nic_up[host]:
            raise SimError(f"{self.host_names[host]}'s NIC is not down")
        self._set_nic(host, up=True)

    def _set_nic(self, host: int, up: bool) -> None:
        self.nic_up[host] = up
        bandwidth = self.nic_cap[host] if up else 0.0
        self.static_cap[self.layout.nic_tx + host] = bandwidth
        self.static_cap[self.layout.nic_rx + host] = bandwidth

    def set_net_limit(self, vm: int, rate: float) -> None:
        """The VM's egress rate limit (bit/s; 0: none), as a tc filter on its vif."""
        self.vm_net_limit[vm] = rate

    def add_flow(self, src: tuple[int, int], dst: tuple[int, int], kind: str) -> int:
        self.flows.append(Flow(src, dst, kind))
        # the VMs whose host or NIC mode its route depends on (-1: an end that is no VM)
        self._flow_end_vms += [end[1] if end[0] in _PER_VM else -1 for end in (src, dst)]
        self.vms.routes_dirty = True
        return len(self.flows) - 1

    def add_io_flows(self, io_vms: list[int], storage_node: np.ndarray) -> None:
        """One read and one write stream per VM that does storage IO: its host's Dom0 <-> its storage
        server (`storage_node`: each server's topology node)."""
        for v in io_vms:
            server = (NODE, int(storage_node[self.vms.storage[v]]))
            self.io_flow_read[v] = self.add_flow(server, (VM_DOM0, v), "io")
            self.io_flow_write[v] = self.add_flow((VM_DOM0, v), server, "io")

    def set_io_demand(self, demand: np.ndarray, read: np.ndarray, write: np.ndarray) -> None:
        """The storage flows' demand (bit/s, into `demand`) from the bytes/s each VM read and wrote."""
        has = self.io_flow_read >= 0
        demand[self.io_flow_read[has]] = read[has] * 8
        demand[self.io_flow_write[has]] = write[has] * 8

    def grow(self) -> bool:
        """Rates for the flows added since the last step (a migration's: nothing carried yet); True if any."""
        added = len(self.flows) - len(self.rate)
        if added:
            self.rate = np.concatenate([self.rate, np.zeros(added)])
        return bool(added)

    def rebuild_routes(self) -> None:
        """Route the flows that need it (new, ended, or with an end on a VM that moved or changed NIC
        mode), then lay every live route out as the flow x resource matrix: the entries of the other
        flows are moved, not rebuilt, so the cost follows the flows re-routed, not all of them."""
        n_f = len(self.flows)
        cache = self._route_cache
        cache.extend([None] * (n_f - len(cache)))
        self._grow_flow_arrays(n_f)
        changed = self._flows_to_route(n_f)
        for f in changed:
            flow = self.flows[f]
            route = self._route(f, flow) if flow.alive else None
            cache[f] = route
            self._set_flow_fields(f, route)
        self._lay_out(n_f, changed)
        self._flow_by_resource = csr_matrix(
            (self._entry_base.copy(), self._entry_res, self._indptr), shape=(n_f, self.layout.size)
        )
        self._resource_by_flow = self._flow_by_resource.T.tocsr()
        self._resource_order = None
        self.vms.routes_dirty = False
        self.vms.moved.clear()
        self._last_solve_key = None

    def _lay_out(self, n_f: int, changed: np.ndarray) -> None:
        """Entries flow by flow, each flow's in path order (CSR by flow): the unchanged flows' entries
        moved to their new offsets, the re-routed flows' written anew."""
        old_ptr = self._indptr
        old_len = np.diff(old_ptr)
        lengths = np.concatenate([old_len, np.zeros(n_f - len(old_len), dtype=np.int64)])
        routes = [self._route_cache[f] for f in changed]
        lengths[changed] = [len(r.resources) if r is not None else 0 for r in routes]
        ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        is_changed = np.zeros(n_f, dtype=bool)
        is_changed[changed] = True
        old_flow = np.repeat(np.arange(len(old_len)), old_len)
        keep = ~is_changed[old_flow]
        kept_flow = old_flow[keep]
        kept_at = ptr[kept_flow] + (np.flatnonzero(keep) - old_ptr[kept_flow])
        new = [(f, r) for f, r in zip(changed, routes, strict=True) if r is not None]
        new_at = np.concatenate([ptr[f] + np.arange(len(r.resources)) for f, r in new]) if new else np.zeros(0, int)
        fields = (("_entry_res", "resources", np.int64), ("_entry_base", "coef", float))
        fields += (("_entry_dom0", "dom0_host", np.int64), ("_entry_cross", "crossings", np.int64))
        for name, attr, dtype in fields:
            out = np.empty(ptr[-1], dtype=dtype)
            out[kept_at] = getattr(self, name)[keep]
            if new:
                out[new_at] = np.concatenate([getattr(r, attr) for _, r in new])
            setattr(self, name, out)
        self._entry_flow = np.repeat(np.arange(n_f), lengths)
        self._indptr = ptr
        self._layouts += 1

    def _flows_to_route(self, n_f: int) -> np.ndarray:
        alive = np.fromiter((flow.alive for flow in self.flows), dtype=bool, count=n_f)
        routed = np.fromiter((r is not None for r in self._route_cache[:n_f]), dtype=bool, count=n_f)
        need = alive != routed  # new flows, and ended flows still routed
        if self.vms.moved:
            moved = np.fromiter(self.vms.moved, dtype=np.int64)
            ends = np.asarray(self._flow_end_vms, dtype=np.int64).reshape(n_f, 2)
            need |= alive & np.isin(ends, moved).any(axis=1)
        return np.flatnonzero(need)

    def _route(self, f: int, flow: Flow) -> datapath.Route:
        return datapath.route(
            self.layout,
            self.topology,
            flow.src,
            flow.dst,
            self.vms.host,
            self.vms.on_vf,
            self.host_xen,
            self.dom0_cost_bit,
            self.params["pv_latency"],
            self.params["vf_latency"],
            zlib.crc32(f"{flow.src}{flow.dst}{f}".encode()),
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

    def _set_flow_fields(self, f: int, route: datapath.Route | None) -> None:
        if route is None:
            for name, _, empty in _FLOW_FIELDS:
                getattr(self, name)[f] = empty
            return
        self.flow_latency[f] = route.latency
        self.flow_src_pv[f], self.flow_dst_pv[f] = route.src_pv, route.dst_pv
        self.flow_src_host[f], self.flow_dst_host[f] = route.src_host, route.dst_host
        self.flow_tx_host[f], self.flow_tx_vf[f] = route.tx_host, route.tx_vf

    def transfer_times(self, flows, bits, load, cap) -> tuple[np.ndarray, np.ndarray]:
        """Per flow, the slowest pipeline stage for one message of `bits`, loaded and unloaded (M/G/1-PS)."""
        ptr = self._flow_by_resource.indptr
        starts, ends = ptr[flows], ptr[flows + 1]
        counts = ends - starts
        idx = np.arange(counts.sum()) + np.repeat(starts - (np.cumsum(counts) - counts), counts)
        owner = np.repeat(np.arange(len(flows)), counts)
        res = self._entry_res[idx]
        rho = np.minimum(load[res] / np.maximum(cap[res], 1e-300), RHO_MAX)
        rho = np.where(np.isfinite(cap[res]), rho, 0.0)
        is_cpu = self._entry_dom0[idx] >= 0
        per_cross = self._flow_by_resource.data[idx] / self._entry_cross[idx]
        speed = np.where(is_cpu, 1.0, cap[res])
        work = np.where(is_cpu, per_cross * bits[owner], bits[owner])
        # rate limiters (VF tiers, vNIC limits) are token buckets: a message within the bucket's burst
        # leaves at line rate; the bucket holds less as the limiter fills up
        limiter = res >= self.layout.vf
        burst = self.params["rate_limit_burst"] * 8 * (1 - rho)
        work = np.where(limiter, np.maximum(work - burst, 0.0), work)
        base = np.where(np.isfinite(speed), work / np.maximum(speed, 1e-300), 0.0)
        loaded = base / (1 - rho)
        t_load = np.zeros(len(flows))
        t_min = np.zeros(len(flows))
        np.maximum.at(t_load, owner, loaded)
        np.maximum.at(t_min, owner, base)
        return t_load, t_min

    def entry_costs(self, active: np.ndarray, vif_overhead: float) -> np.ndarray:
        """Each route entry's cost per bit this step: Dom0's grows by `vif_overhead` for each active
        para-virtual NIC on its host beyond the first."""
        src_vm, dst_vm = self.flow_vm_ends()
        pv_vm_active = np.zeros(self.n_vms, dtype=bool)
        pv_vm_active[src_vm[active & self.flow_src_pv]] = True
        pv_vm_active[dst_vm[active & self.flow_dst_pv]] = True
        n_vifs = np.bincount(self.vms.host[pv_vm_active], minlength=self.n_hosts)
        vif_factor = 1.0 + vif_overhead * np.maximum(n_vifs - 1, 0)
        return self._entry_base * np.where(self._entry_dom0 >= 0, vif_factor[np.maximum(self._entry_dom0, 0)], 1.0)

    def solve(self, cap: np.ndarray, demand: np.ndarray, data: np.ndarray, active: np.ndarray) -> np.ndarray:
        """The flows' rates (bit/s) for this step: solved again only if demand, capacities or costs
        changed (the weights follow from demand and routes)."""
        key = (
            demand.tobytes(),
            cap.tobytes(),
            data.tobytes(),
            self.stream_demand.tobytes(),
            self.stream_base.tobytes(),
            self.web_sending.tobytes(),
        )
        if key != self._last_solve_key:
            self._resource_by_flow.data[:] = data[self._resource_by_flow_order()]
            self._flow_by_resource.data[:] = data
            weight = datapath.arbitration_weights(active, self.flow_tx_host, self.flow_tx_vf, self.n_hosts)
            self.rate = self._solve(cap, demand, weight)
            self._last_solve_key = key
        return self.rate

    def _solve(self, cap: np.ndarray, demand: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        """Max-min fair rates of the flows; web streams' flows shared per connection (sim/web_sharing.py)."""

        def solve(flow_demand: np.ndarray, flow_weight: np.ndarray | None) -> np.ndarray:
            return max_min_fair(self._resource_by_flow, cap, flow_demand, at=self._flow_by_resource, weight=flow_weight)

        if not self.web:
            return solve(demand, weight)
        shared = share_per_connection(
            self.web, solve, demand, weight, self.stream_demand, self.stream_base, self.web_sending, self.alone(cap)
        )
        self.web_rate, self.web_transfer, self.web_sending = shared.stream_rate, shared.transfer, shared.sending
        return shared.flow_rate

    def _resource_by_flow_order(self) -> np.ndarray:
        """Permutation from flow-major entries to resource-major (CSR of the resource x flow matrix) entries."""
        if self._resource_order is None:
            tmp = csr_matrix(
                (
                    np.arange(len(self._entry_base), dtype=float) + 1,
                    self._flow_by_resource.indices,
                    self._flow_by_resource.indptr,
                ),
                shape=self._flow_by_resource.shape,
            ).T.tocsr()
            self._resource_order = tmp.data.astype(np.int64) - 1
        return self._resource_order

    def vm_bytes(self, nbytes: np.ndarray, paths: tuple[str, ...] = ("guest", "vnic")) -> np.ndarray:
        """2 x VMs per path: the bytes each guest sent and received over the step (`nbytes` per flow), and
        those of them that crossed its vNIC (the para-virtual path), sent and received."""
        src_vm, dst_vm = self.flow_vm_ends()
        out = np.empty((2 * len(paths), self.n_vms))
        row = 0
        for path in paths:
            for end, pv in ((src_vm, self.flow_src_pv), (dst_vm, self.flow_dst_pv)):
                crossed = (end >= 0) if path == "guest" else (end >= 0) & pv
                out[row] = np.bincount(end[crossed], weights=nbytes[crossed], minlength=self.n_vms)
                row += 1
        return out

    def nic_bytes(self, nbytes: np.ndarray) -> np.ndarray:
        """2 x hosts: the bytes each host's NIC sent and received over the step (`nbytes` per flow)."""
        lay = self.layout
        load = np.bincount(self._entry_res, weights=nbytes[self._entry_flow], minlength=lay.size)
        return np.stack([load[lay.nic_tx : lay.nic_rx], load[lay.nic_rx : lay.dom0]])

    def flow_vm_ends(self) -> tuple[np.ndarray, np.ndarray]:
        """Each flow's source and destination VM (-1: not a VM), extended for the flows added since (flows
        are only ever appended: a day of 20,000 migrations must not re-read them all every step)."""
        done = self._ends_n
        if done != len(self.flows):
            added = self.flows[done:]
            src = np.array([f.src[1] if f.src[0] == VM else -1 for f in added], dtype=np.int64)
            dst = np.array([f.dst[1] if f.dst[0] == VM else -1 for f in added], dtype=np.int64)
            self._src_vm = np.concatenate([self._src_vm, src])
            self._dst_vm = np.concatenate([self._dst_vm, dst])
            self._ends_n = len(self.flows)
        return self._src_vm, self._dst_vm

    # the network's share of a step: offered load, capacities, the load on each resource and its CPU cost
    def offered(self, demand: np.ndarray, active: np.ndarray, nic_cap: np.ndarray) -> np.ndarray:
        """Demand bounded by an even share of the NICs at its ends: the load CPU pass 1 plans for."""
        hs, hd = self.flow_src_host, self.flow_dst_host
        ends_per_host = np.bincount(hs[active & (hs >= 0)], minlength=self.n_hosts) + np.bincount(
            hd[active & (hd >= 0)], minlength=self.n_hosts
        )
        share = nic_cap / np.maximum(ends_per_host, 1)
        cap = np.minimum(
            np.where(hs >= 0, share[np.maximum(hs, 0)], np.inf), np.where(hd >= 0, share[np.maximum(hd, 0)], np.inf)
        )
        return np.minimum(demand, cap)

    def alone(self, cap: np.ndarray) -> np.ndarray:
        """Per flow, the rate it would get alone on its path, with no other vif on its hosts: the least
        capacity over cost per bit of the resources it crosses (links, Dom0's CPU and its netback thread,
        VF tiers, rate limits). Computed again only when routes or capacities change."""
        key = (self._layouts, cap.tobytes())
        if key != self._alone_key:
            out = np.full(len(self._indptr) - 1, np.inf)
            routed = np.flatnonzero(np.diff(self._indptr) > 0)
            if len(routed):
                per_entry = cap[self._entry_res] / np.maximum(self._entry_base, 1e-300)
                out[routed] = np.minimum.reduceat(per_entry, self._indptr[routed])
            self._alone, self._alone_key = out, key
        return self._alone

    def capacities(self, dom0_alloc: np.ndarray) -> np.ndarray:
        vf = np.where(self.vms.on_vf & (self.vfs.rate > 0), self.vfs.rate * self.params["protocol_efficiency"], np.inf)
        lim = np.where(self.vm_net_limit > 0, self.vm_net_limit, np.inf)
        netback = np.minimum(1.0, dom0_alloc[self.vms.host])  # one Dom0 vCPU's thread per vif (Xen)
        return np.concatenate([self.static_cap, dom0_alloc, netback, vf, lim])

    def load(self, rate: np.ndarray, data: np.ndarray) -> np.ndarray:
        return np.bincount(self._entry_res, weights=data * rate[self._entry_flow], minlength=self.layout.size)

    def dom0_cpu(self, rate: np.ndarray, data: np.ndarray) -> np.ndarray:
        """Dom0 CPU per host; the netback thread entries are a part of it, counted once."""
        sel = (self._entry_dom0 >= 0) & (self._entry_res < self.layout.netback)
        return np.bincount(
            self._entry_dom0[sel], weights=data[sel] * rate[self._entry_flow[sel]], minlength=self.n_hosts
        )

    def guest_net_cpu(self, rate: np.ndarray) -> np.ndarray:
        """Guest CPU for its own network stack, at each VM end of each flow."""
        out = np.zeros(self.n_vms)
        if not len(rate):
            return out
        src_vm, dst_vm = self.flow_vm_ends()
        cpu = np.where(np.isfinite(rate), rate, 0.0) * self.guest_cost_bit
        from_vm, to_vm = src_vm >= 0, dst_vm >= 0
        out += np.bincount(src_vm[from_vm], weights=cpu[from_vm], minlength=self.n_vms)
        out += np.bincount(dst_vm[to_vm], weights=cpu[to_vm], minlength=self.n_vms)
        return out
