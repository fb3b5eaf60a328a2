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

import numpy as np

from sova.model.scenario import Scenario, simulator_defaults
from sova.model.topology import build_topology
from sova.sim import datapath
from sova.sim.compute import weighted_share
from sova.sim.datapath import Layout
from sova.sim.events import EventLog
from sova.sim.hypervisor_ops import HypervisorOperations
from sova.sim.migration import Migration, migration_config
from sova.sim.records import Flow, MigrationRecord
from sova.sim.routing import Routing
from sova.sim.storage_epochs import StorageEpochs
from sova.sim.vm_lifecycle import VmLifecycle
from sova.sim.workload_kinds.base import Demand, IOStreams, Progress
from sova.sim.workloads import Workloads

MEM_USED_DEFAULT = 0.4  # share of a guest's memory in use when no workload says
# per-VM counters: what the fabric's step counts (added in parts over its ticks), the packets that follow
# from its bytes, and what each storage epoch counts
FABRIC_VM_COUNTERS = (
    "cpu_time",
    "wait_time",
    "blocked_time",
    "guest_tx_bytes",
    "guest_rx_bytes",
    "vnic_tx_bytes",
    "vnic_rx_bytes",
)
PACKET_COUNTERS = ("guest_tx_packets", "guest_rx_packets", "vnic_tx_packets", "vnic_rx_packets")
BLOCK_COUNTERS = ("blk_rd_ops", "blk_wr_ops", "blk_rd_bytes", "blk_wr_bytes", "blk_time")
VM_COUNTERS = FABRIC_VM_COUNTERS + PACKET_COUNTERS + BLOCK_COUNTERS
HOST_COUNTERS = ("host_cpu_time", "dom0_cpu_time", "nic_tx_bytes", "nic_rx_bytes")
_BYTES = slice(3, 7)  # the rows of FABRIC_VM_COUNTERS the packet counters follow, in their order
_PACKETS = slice(len(FABRIC_VM_COUNTERS), len(FABRIC_VM_COUNTERS) + len(PACKET_COUNTERS))
_BLOCK = slice(_PACKETS.stop, len(VM_COUNTERS))


class Simulator(Routing, HypervisorOperations, VmLifecycle):
    """The data center of one scenario; ``step()`` advances it by one time step."""

    def __init__(self, scenario: Scenario, seed: int | None = None):
        self.scenario = scenario
        self.params = {**simulator_defaults(), **scenario.simulator}
        self.migration_config = migration_config(self.params)
        self.rng = np.random.default_rng(scenario.seed if seed is None else seed)
        self.t = 0.0
        self.fabric_dt = scenario.step  # compute, network, workloads, migrations: one step of this
        self.dt = scenario.tick  # the finest clock (storage epochs), which step() advances by
        self._ticks_per_step = round(self.fabric_dt / self.dt)
        self._tick = 0  # ticks since the start: the fabric steps when this is a whole number of steps
        hosts, vms = scenario.hosts, scenario.vms
        self.host_names = [h.name for h in hosts]
        self.vm_names = [v.name for v in vms]
        self.H, self.V = len(hosts), len(vms)
        self.host_cores = np.array([h.cores for h in hosts], dtype=float)
        self.host_core_mips = np.array([h.mips or h.ghz * 1000 for h in hosts], dtype=float)
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
        self.storage = StorageEpochs(len(scenario.vms), self.st_par, self.st_access, self.st_bw)
        self._epoch_counted = None  # the epoch result whose counts _epoch_counts holds

        hidx, sidx = scenario.host_index(), {n: i for i, n in enumerate(self.storage_names)}
        self.vm_host = np.array([hidx.get(v.host, 0) for v in vms], dtype=np.int64)  # unplaced: none yet
        self.vm_vcpus = np.array([v.vcpus for v in vms], dtype=float)
        self.vm_mips = np.array([v.mips for v in vms], dtype=float)
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
        self.vm_mem_used = self.vm_mem * MEM_USED_DEFAULT  # until the workloads are known, below
        self._moved_vms: set[int] = set()  # VMs whose host or NIC mode changed since the last routing
        self.vf_pending: list[tuple[float, int]] = []  # (due time, vm) of each hot-plug under way
        self.vf_plugging: dict[int, str] = {}  # VM -> 'attaching' | 'detaching' while its hot-plug runs
        self.dom0_mem_reserved = np.zeros(self.H)

        self.layout = Layout(self.topology.n_links, self.H, self.V)
        eff = self.params["protocol_efficiency"]
        self.static_cap = np.concatenate([self.topology.link_cap * eff, self.nic_bw * eff, self.nic_bw * eff])
        payload = self.params["packet_payload"]
        self.dom0_cost_bit = self.params["dom0_cost_per_byte"] / 8 + self.params["dom0_cost_per_packet"] / (8 * payload)
        self.guest_cost_bit = self.params["guest_cost_per_byte"] / 8 + self.params["guest_cost_per_packet"] / (
            8 * payload
        )
        self.pkt_bits = 8 * payload

        self.workloads = Workloads(scenario, self.rng)
        stated = self.workloads.memory_used > 0  # what the workloads say, else the default share
        self.vm_mem_used[stated] = np.minimum(self.workloads.memory_used[stated], self.vm_mem[stated])
        self.vf_used = np.zeros(self.H, dtype=np.int64)
        self._init_lifecycle(vms)  # after the workloads: a trace may say when a VM lives
        self.vf_used = np.bincount(self.vm_host[self.vm_vf & self.vm_present], minlength=self.H).astype(np.int64)
        self.flows: list[Flow] = []
        self._flow_end_vms: list[int] = []  # two per flow, for re-routing the flows of VMs that moved
        self._register_workload_flows()
        self.migrations: dict[int, tuple[Migration, int]] = {}
        self.migration_log: list[MigrationRecord] = []
        self.events = EventLog()  # what finished (batch runs, jobs, transfers), until someone takes it
        self.vf_log: list[tuple[float, str, str, str]] = []  # (time, VM, host, 'attached' | 'detached')
        self._routes_dirty = True
        self._route_cache: list[datapath.Route | None] = []
        self._last_solve_key: tuple | None = None
        self.last_vm_alloc: np.ndarray | None = None
        self.last_vm_want: np.ndarray | None = None
        self.rate = np.zeros(len(self.flows))
        self._init_counters()

    # ------------------------------------------------------------------ set-up
    def _init_counters(self) -> None:
        """Sensor counters, as rows of two arrays (per VM, per host) so that a tick adds them at once;
        ``counters`` names each row."""
        self._vm_counts = np.zeros((len(VM_COUNTERS), self.V))
        self._host_counts = np.zeros((len(HOST_COUNTERS) + 1, self.H))  # the last row: energy
        self.counters = {name: self._vm_counts[i] for i, name in enumerate(VM_COUNTERS)}
        self.counters |= {name: self._host_counts[i] for i, name in enumerate(HOST_COUNTERS)}
        self.energy_j = self._host_counts[-1]
        self.flow_bytes = np.zeros(len(self.flows))
        # last step's gauges, for the recorder
        self.gauges: dict[str, np.ndarray] = {}

    # ------------------------------------------------------------------ routing
    # ------------------------------------------------------------------ step
    def step(self) -> None:
        """Advance the data center by one tick of its finest clock: the fabric's step when it is due (its
        counters then grow in even parts over the step's ticks), and one storage epoch."""
        if self._tick % self._ticks_per_step == 0:
            self._fabric_step()
        else:
            self._storage_epoch()
        self._add_window(1.0 / self._ticks_per_step)
        self._tick += 1
        self.t = self._tick * self.dt
        self._process_lifecycle(self.t)  # who is there for the next tick: the loop can place arrivals first

    @property
    def step_ended(self) -> bool:
        """The last tick ended a fabric step (always, unless the storage subsystem ticks finer)."""
        return self._tick % self._ticks_per_step == 0

    def _fabric_step(self) -> None:
        """Compute, network, workloads and migrations over the coming fabric step, and its first epoch."""
        t, dt, p = self.t, self.fabric_dt, self.params
        self.workloads.apply_phases(t)
        self._process_vf_ops(t)
        if len(self.rate) != len(self.flows):
            added = len(self.flows) - len(self.rate)  # flows of migrations started since: nothing carried yet
            self.rate = np.concatenate([self.rate, np.zeros(added)])
            self.flow_bytes = np.concatenate([self.flow_bytes, np.zeros(added)])
        if self._routes_dirty:
            self._rebuild_routes()
        paused = self._paused_fraction()
        run = 1.0 - paused

        wanted = self._workload_demands(t, dt, run)
        cpu_dem, demand, flow_scale = wanted.cpu, wanted.flow, wanted.flow_scale
        io = self._io_demands(t, dt)
        for _mig, fid in self.migrations.values():
            demand[fid] = p["migration_bandwidth"] or np.inf
        # storage first: what the devices serve is what crosses the network
        self.storage.offer(io, self.vm_storage[io.vm])
        self._storage_epoch(demand)

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
        vm_dem = np.minimum(cpu_dem + guest_net, self.vm_cpu_limit())
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
        rate = self.rate * flow_scale
        load = self._load(rate, data)

        # CPU pass 2: with what the network actually carried
        vm_want = cpu_dem + self._guest_net_cpu(rate)  # before the vCPU count and cap bound it
        vm_dem = np.minimum(vm_want, self.vm_cpu_limit())
        dom0_used = np.minimum(self._dom0_cpu(rate, data), self.dom0_vcpus)
        vm_alloc, dom0_alloc = self._share_cpu(vm_dem, dom0_used)
        stretch = self._stretch(vm_dem)

        # a stop-and-copy during this step pauses the VM for exactly its part of the step
        run_now = self._advance_migrations(rate, dt, run)
        vm_alloc = vm_alloc * (run_now / np.maximum(run, 1e-12))
        got = Progress(dt, rate, load, cap, vm_alloc, vm_want, stretch, run_now)
        for kind, group in self.workloads.active():
            kind.advance(group, self, got)
        self.last_vm_alloc, self.last_vm_want = vm_alloc, vm_want
        self._account(rate, vm_alloc, vm_dem, dom0_alloc, stretch, dt)
        self.gauges["link_util"] = load[: self.layout.n_links] / np.maximum(cap[: self.layout.n_links], 1e-300)
        self.gauges["nic_tx_util"] = load[self.layout.nic_tx : self.layout.nic_rx] / np.maximum(nic_cap, 1e-300)
        self.gauges["nic_rx_util"] = load[self.layout.nic_rx : self.layout.dom0] / np.maximum(nic_cap, 1e-300)

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

    def vm_cpu_limit(self) -> np.ndarray:
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
        busy = vm_dem > 2 * self.params["idle_guest_cpu"]
        runnable = np.bincount(self.vm_host[busy], weights=self.vm_vcpus[busy], minlength=self.H)
        return 1.0 + self.params["sched_overhead"] * np.maximum(runnable / self.host_cores - 1.0, 0.0)

    def _capacities(self, dom0_alloc: np.ndarray) -> np.ndarray:
        vf = np.where(self.vm_vf & (self.vm_vf_rate > 0), self.vm_vf_rate * self.params["protocol_efficiency"], np.inf)
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

    # ------------------------------------------------------------------ workloads
    def _workload_demands(self, t: float, dt: float, run: np.ndarray) -> Demand:
        """CPU demand per VM and demand per flow for the step [t, t + dt), each kind adding its own."""
        src_vm, dst_vm = self._flow_vm_ends()
        ends_run = np.where(src_vm >= 0, run[np.maximum(src_vm, 0)], 1.0) * np.where(
            dst_vm >= 0, run[np.maximum(dst_vm, 0)], 1.0
        )
        n_flows = len(self.flows)
        step = Demand(
            t, dt, run, ends_run, np.full(self.V, self.params["idle_guest_cpu"]), np.zeros(n_flows), np.ones(n_flows)
        )
        for kind, group in self.workloads.active():
            kind.demand(group, self, step)
        np.multiply(step.cpu, run, out=step.cpu)
        # a paused end stops the flow; an unlimited stream's demand is inf, and inf * 0 would be NaN
        np.multiply(step.flow, ends_run, out=step.flow, where=ends_run > 0)
        step.flow[ends_run <= 0] = 0.0
        return step

    def vcpu_cores(self, vms: np.ndarray) -> np.ndarray:
        """Host cores the VMs' vCPUs use at 100 %: their MIPS over the host's per-core MIPS where the VM
        states its MIPS (a 1,000-MIPS vCPU on a 2,660-MIPS core uses 0.376 of it), else a whole core."""
        stated = self.vm_mips[vms] > 0
        share = self.vm_mips[vms] / self.host_core_mips[self.vm_host[vms]]
        return self.vm_vcpus[vms] * np.where(stated, share, 1.0)

    def _io_demands(self, t: float, dt: float) -> IOStreams:
        """The IO streams of every kind that does IO, in kind order (the storage subsystem limits them)."""
        parts = [io for kind, g in self.workloads.active() if (io := kind.io(g, self, t, dt)) is not None]
        if not parts:
            empty = np.zeros(0)
            return IOStreams(empty.astype(np.int64), empty, empty, empty, empty)
        return IOStreams(
            *(np.concatenate([getattr(io, f) for io in parts]) for f in ("vm", "iops", "size", "read", "depth"))
        )

    def _storage_epoch(self, demand: np.ndarray | None = None) -> None:
        """One epoch of the storage subsystem: its block counters; at a fabric step (`demand` given) the
        network demand of the IO flows too, from what this epoch served."""
        io = self.storage.streams
        if io is None or not len(io.vm):
            return
        served = self.storage.epoch(self.vm_io_limit, self.dt)
        self.gauges["storage_util"] = served.utilisation
        self.gauges["io"] = {"vm": io.vm, "served": served.iops, "offered": io.iops, "latency": served.latency}
        if served is not self._epoch_counted:  # a new steady state: count what one of its epochs does
            vm, ops = io.vm, served.iops * self.dt
            self._epoch_counts = np.stack(
                [
                    np.bincount(vm, weights=ops * io.read, minlength=self.V),
                    np.bincount(vm, weights=ops * (1 - io.read), minlength=self.V),
                    np.bincount(vm, weights=ops * io.read * io.size, minlength=self.V),
                    np.bincount(vm, weights=ops * (1 - io.read) * io.size, minlength=self.V),
                    np.bincount(vm, weights=ops * served.latency, minlength=self.V),
                ]
            )
            self._epoch_counted = served
        self._vm_counts[_BLOCK] += self._epoch_counts
        if demand is None:
            return
        bytes_s = served.iops * io.size
        read = np.bincount(io.vm, weights=bytes_s * io.read, minlength=self.V)
        write = np.bincount(io.vm, weights=bytes_s * (1 - io.read), minlength=self.V)
        has = self.io_flow_read >= 0
        demand[self.io_flow_read[has]] = read[has] * 8
        demand[self.io_flow_write[has]] = write[has] * 8

    # ------------------------------------------------------------------ progress
    # ------------------------------------------------------------------ accounting
    def _account(self, rate, vm_alloc, vm_dem, dom0_alloc, stretch, dt) -> None:
        """What the sensors count over the fabric step (added in even parts over its ticks), and gauges."""
        got = vm_alloc * dt
        want = np.minimum(vm_dem, self.vm_vcpus)
        wait = np.minimum((want - vm_alloc) * dt + got * (stretch[self.vm_host] - 1), self.vm_vcpus * dt - got)
        blocked = np.where(self.vm_present, np.maximum(self.vm_vcpus * dt - got - wait, 0.0), 0.0)
        nbytes = np.where(np.isfinite(rate), rate, 0.0) * dt / 8
        src_vm, dst_vm = self._flow_vm_ends()
        per_vm = np.empty((len(FABRIC_VM_COUNTERS), self.V))
        per_vm[0], per_vm[1], per_vm[2] = got, wait, blocked
        row = 3
        for path in ("guest", "vnic"):
            for end, pv in ((src_vm, self.flow_src_pv), (dst_vm, self.flow_dst_pv)):
                m = (end >= 0) if path == "guest" else (end >= 0) & pv
                per_vm[row] = np.bincount(end[m], weights=nbytes[m], minlength=self.V)
                row += 1
        lay = self.layout
        load_bytes = np.bincount(self._entry_res, weights=nbytes[self._entry_flow], minlength=lay.size)
        host_busy = np.bincount(self.vm_host, weights=vm_alloc, minlength=self.H) + dom0_alloc
        util = host_busy / self.host_cores
        power = self.power_idle + (self.power_max - self.power_idle) * np.minimum(util, 1.0)
        per_host = np.empty((len(HOST_COUNTERS) + 1, self.H))
        per_host[0], per_host[1], per_host[4] = host_busy * dt, dom0_alloc * dt, power * dt
        per_host[2], per_host[3] = load_bytes[lay.nic_tx : lay.nic_rx], load_bytes[lay.nic_rx : lay.dom0]
        self._window = (per_vm, per_host, nbytes)
        self.gauges.update(
            host_util=util, dom0_alloc=dom0_alloc, vm_alloc=vm_alloc, vm_demand=vm_dem, power=power, rate=rate
        )

    def _add_window(self, part: float) -> None:
        """Add `part` of the fabric step's counts to the counters."""
        per_vm, per_host, nbytes = self._window
        self._vm_counts[: len(FABRIC_VM_COUNTERS)] += per_vm * part
        self._host_counts += per_host * part
        self.flow_bytes[: len(nbytes)] += nbytes * part
        # whole packets, from the cumulative bytes so rounding never accumulates
        self._vm_counts[_PACKETS] = np.ceil(self._vm_counts[_BYTES] / (self.pkt_bits / 8) - 1e-6)

    # ------------------------------------------------------------------ operations (the driver calls these)
