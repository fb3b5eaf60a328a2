"""The simulator: a time-stepped fluid model of a virtualized data center. This module holds its
subsystems and the order of a step; each part lives in a module named for what it is.

A tick advances the finest clock (``dt``: the storage epoch, or the step when storage keeps the step's
pace). At each fabric step (``fabric_dt``): VMs come and go (``vm_lifecycle``), workloads state their
demand (``workload_kinds``), storage serves its first epoch (``storage_epochs``), CPU is shared per host
with Dom0 (``compute``), the network max-min fairly over links, NICs, VF caps and Dom0 CPU (``network``,
``datapath``, ``maxmin``), migrations and VF hot-plug advance (``live_migrations``, ``migration``,
``sriov_vfs``), the workloads' work advances, and the sensors count (``sensors``). Each part is a
subsystem the engine holds, which owns its state; the commands that span several are ``hypervisor_ops``'s.
Everything a real host would expose goes into counters read by the ``sim`` driver; outcome metrics
(response times, job times, energy) are the experimenter's ground truth and never reach policies.

Work is recomputed only where it changed: routes are rebuilt when a VM moves or changes NIC mode, the
network is re-solved only when demands, routes or capacities changed, and a storage epoch only when its
streams or limits did.
"""

from __future__ import annotations

import numpy as np

from sova.model.power_models import host_curve
from sova.model.scenario import Scenario, simulator_defaults
from sova.model.topology import build_topology
from sova.sim.blkback import BlkbackParams
from sova.sim.compute import Compute
from sova.sim.events import EventLog
from sova.sim.host_faults import HostFaults
from sova.sim.host_power import HostPower
from sova.sim.hypervisor_ops import HypervisorOperations
from sova.sim.least_power_start import least_power_start
from sova.sim.live_migrations import LiveMigrations
from sova.sim.migration import migration_config
from sova.sim.network import Network
from sova.sim.records import SimError
from sova.sim.sensors import Sensors, StepUse
from sova.sim.sriov_vfs import SriovVfs
from sova.sim.step_moves import StepState, host_pieces
from sova.sim.storage_epochs import StorageEpochs
from sova.sim.storage_io import StorageIo
from sova.sim.vm_inventory import VmInventory
from sova.sim.vm_lifecycle import VmLifecycle
from sova.sim.workload_kinds.base import Demand, Granted
from sova.sim.workloads import Workloads


class Simulator(HypervisorOperations):
    """The data center of one scenario; ``step()`` advances it by one time step."""

    def __init__(self, scenario: Scenario, seed: int | None = None):
        self.scenario = scenario
        self.params = {**simulator_defaults(), **scenario.simulator}
        self.rng = np.random.default_rng(scenario.seed if seed is None else seed)
        self.t = 0.0
        self.fabric_dt = scenario.step  # compute, network, workloads, migrations: one step of this
        self.dt = scenario.tick  # the finest clock (storage epochs), which step() advances by
        self._ticks_per_step = round(self.fabric_dt / self.dt)
        self._tick = 0  # ticks since the start: the fabric steps when this is a whole number of steps
        hosts = scenario.hosts
        curve = np.array([host_curve(h.power_model, h.power_idle, h.power_max, h.power_curve) for h in hosts])
        vms = (
            scenario.vms
            if self.params["initial_placement"] == "scenario"
            else least_power_start(hosts, scenario.vms, curve)
        )
        self.host_names = [h.name for h in hosts]
        self.vm_names = [v.name for v in vms]
        self.n_hosts, self.n_vms = len(hosts), len(vms)
        self.storage_names = [s.name for s in scenario.storage]
        self.vms = VmInventory(hosts, vms, self.storage_names)
        wake_wait = (self.params["wake_wait"], self.params["wake_wait_over"])
        self.compute = Compute(hosts, vms, self.params["sched_overhead"], self.params["ht_yield"], wake_wait)
        self.vfs = SriovVfs(hosts, vms, self.vms, self.params["vf_attach_time"], self.params["vf_detach_time"])
        self.power = HostPower(hosts, curve, self.params["power_follows_load"])
        self.faults = HostFaults(self.host_names, self.vm_names, self.vms, self.power)
        self.topology = build_topology(scenario.topology, self.host_names, scenario.storage)
        self.storage_node = np.array([self.topology.index[f"storage:{s}"] for s in self.storage_names], dtype=np.int64)
        host_xen = np.array([h.hypervisor == "xen" for h in hosts])
        blkback = BlkbackParams.from_params(self.params)
        storage_rng = np.random.default_rng([scenario.seed if seed is None else seed, 0x5707])  # its own stream
        epochs = StorageEpochs(
            len(vms),
            scenario.storage,
            host_xen,
            blkback,
            storage_rng,
            self.params["io_noise"],
            self.params["io_limiter"],
        )
        self.netback_cpu = np.zeros(self.n_hosts)  # Dom0 cores netback used in the last step, per host

        self.migrations = LiveMigrations(self.n_hosts, self.n_vms, migration_config(self.params))

        self.workloads = Workloads(scenario, self.rng)
        stated = self.workloads.memory_used > 0  # what the workloads say, else the default share
        self.vms.memory_used[stated] = np.minimum(self.workloads.memory_used[stated], self.vms.memory[stated])
        self.lifecycle = VmLifecycle(vms, self.workloads, self.compute, self.vms)  # a trace may say when a VM lives
        self.vms.present = self.lifecycle.there_at_start()
        self.vfs.count_used()
        for vm in self.lifecycle.arriving_at_start():
            self._arrive(int(vm), 0.0, 0.0)
        self.network = Network(self.topology, hosts, host_xen, self.vms, self.vfs, self.workloads, self.params)
        self._register_workload_flows()
        self.network.grow()
        self.events = EventLog()  # what finished (batch runs, jobs, transfers), until someone takes it
        self.last_vm_alloc: np.ndarray | None = None
        self.last_vm_want: np.ndarray | None = None
        self.sensors = Sensors(self.n_hosts, self.n_vms, len(self.network.flows))
        self.storage = StorageIo(epochs, self.n_vms, self.n_hosts, self.sensors)

    # ------------------------------------------------------------------ step
    def step(self) -> None:
        """Advance the data center by one tick of its finest clock: the fabric's step when it is due (its
        counters then grow in even parts over the step's ticks), and one storage epoch."""
        if self._tick % self._ticks_per_step == 0:
            self._fabric_step()
        else:
            self._storage_epoch()
        self.sensors.add_part(1.0 / self._ticks_per_step, self.network.pkt_bits / 8)
        self._tick += 1
        self.t = self._tick * self.dt
        self.faults.seen[self.faults.reporting(self.t)] = self.t  # all that are up and not silent reported
        if self.step_ended:  # who is there for the next step: the loop can place arrivals before it
            self._process_lifecycle(self.t)

    def set_host_power(self, host: int, state: str) -> None:
        """Put an empty host to sleep or off, or wake one; refuses a crashed host, and one with VMs or
        migrations going down."""
        if self.faults.failed[host]:
            raise SimError(f"{self.host_names[host]} has crashed; it comes back when it is repaired")
        empty = not (self.migrations.per_host[host] or self.vms.on_host(host).any())
        self.power.set(host, state, self.t, empty)

    @property
    def step_ended(self) -> bool:
        """The last tick ended a fabric step (always, unless the storage subsystem ticks finer)."""
        return self._tick % self._ticks_per_step == 0

    def _fabric_step(self) -> None:
        """Compute, network, workloads and migrations over the coming fabric step, and its first epoch."""
        t, dt, p, net = self.t, self.fabric_dt, self.params, self.network
        self.workloads.apply_phases(t)
        self.vfs.advance(t)
        self.power.advance(t)
        self.faults.advance(t)
        if net.grow():  # flows of migrations started since
            self.sensors.add_flows(len(net.flows))
        if self.vms.routes_dirty:
            net.rebuild_routes()
        paused = self._paused_fraction()
        run = 1.0 - paused

        wanted = self._workload_demands(t, dt, run)
        cpu_dem, demand, flow_scale = wanted.cpu, wanted.flow, wanted.flow_scale
        for mig, fid in self.migrations.under_way.values():  # one waiting for its destination to wake sends nothing yet
            if fid >= 0:  # CloudSim's model has no flow
                demand[fid] = 0.0 if mig.wait_left >= dt else p["migration_bandwidth"] or np.inf
        # storage first: what the devices serve is what crosses the network
        offered = [
            (kind.name, io) for kind, g in self.workloads.active() if (io := kind.io(g, self, t, dt)) is not None
        ]
        self.storage.offer(offered, run, self.vms)
        self._storage_epoch()
        moved = self.storage.bytes_per_vm()
        if moved is not None:
            net.set_io_demand(demand, *moved)

        active = demand > 0
        data = net.entry_costs(active, p["dom0_vif_overhead"])

        # CPU pass 1: the CPU Dom0 could get for forwarding, with guests asking for their offered load
        nic_cap = net.nic_cap * net.nic_up
        guest_net = net.guest_net_cpu(net.offered(demand, active, nic_cap))
        compute = self.compute
        vm_dem = np.minimum(cpu_dem + guest_net, compute.vm_cpu_limit())
        _, dom0_alloc = compute.share(self.vms.host, vm_dem, compute.dom0_vcpus)

        # network
        cap = net.capacities(dom0_alloc)
        rate = net.solve(cap, demand, data, active) * flow_scale
        load = net.load(rate, data)

        # what each flow would have carried had only its own path limited it (Dom0 with all its vCPUs and no
        # other vif to serve): the demand a host's counters of unmet demand show, for CloudScope's Eq. 5
        wanted = np.maximum(rate, np.minimum(demand, net.alone(net.capacities(compute.dom0_vcpus))))

        # CPU pass 2: with what the network actually carried
        vm_want = cpu_dem + net.guest_net_cpu(rate)  # before the vCPU count and cap bound it
        vm_dem = np.minimum(vm_want, compute.vm_cpu_limit())
        self.netback_cpu = np.minimum(net.dom0_cpu(rate, data), compute.dom0_vcpus)
        dom0_used = np.minimum(self.netback_cpu + self.storage.blkback_cpu, compute.dom0_vcpus)
        vm_alloc, dom0_alloc = compute.share(self.vms.host, vm_dem, dom0_used)
        runnable = compute.runnable(self.vms.host, vm_dem)
        stretch = compute.stretch(runnable)
        work_stretch = stretch / compute.thread_speed(self.vms.host, vm_alloc, dom0_alloc)

        # a stop-and-copy during this step pauses the VM for exactly its part of the step
        ran_on = self.vms.host.copy()  # where each VM ran this step: a migration that ends now moves it after
        run_now = self._advance_migrations(rate, dt, run)
        full_alloc, vm_alloc = vm_alloc, vm_alloc * (run_now / np.maximum(run, 1e-12))
        if (self.vms.host != ran_on).any():  # a migration that ended moved its VM's runnable vCPUs
            runnable = compute.runnable(self.vms.host, vm_dem)
        wake, dom0_wait = compute.wake_waits(self.vms.host, runnable, dom0_alloc)
        got = Granted(dt, rate, load, cap, vm_alloc, vm_want, work_stretch, run_now, wake, dom0_wait)
        for kind, group in self.workloads.active():
            kind.advance(group, self, got)
        self.last_vm_alloc, self.last_vm_want = vm_alloc, vm_want
        self._account(rate, wanted, vm_alloc, vm_dem, dom0_alloc, stretch, dt, ran_on, full_alloc)
        gauges, lay = self.sensors.gauges, net.layout
        gauges["link_util"] = load[: lay.n_links] / np.maximum(cap[: lay.n_links], 1e-300)
        gauges["nic_tx_util"] = load[lay.nic_tx : lay.nic_rx] / np.maximum(nic_cap, 1e-300)
        gauges["nic_rx_util"] = load[lay.nic_rx : lay.dom0] / np.maximum(nic_cap, 1e-300)

    def _account(self, rate, wanted, vm_alloc, vm_dem, dom0_alloc, stretch, dt, ran_on, full_alloc) -> None:
        """Hand the sensors what the fabric step used. `ran_on`: each VM's host during the step (a migration
        that ended in it moved the VM after); `full_alloc`: the CPU VMs got before migrations took theirs."""

        def to_bytes(bits_per_s: np.ndarray) -> np.ndarray:
            return np.where(np.isfinite(bits_per_s), bits_per_s, 0.0) * dt / 8

        nbytes = to_bytes(rate)
        host_busy = np.bincount(ran_on, weights=vm_alloc, minlength=self.n_hosts) + dom0_alloc
        power = self.power.draw(host_busy / self.compute.host_cores, dt, self.t)
        moved = None
        if self.migrations.moves:
            moved = self._charge_moves(host_busy, power, full_alloc, vm_dem, dom0_alloc, ran_on, dt)
        util = host_busy / self.compute.host_cores
        use = StepUse(
            dt=dt,
            vm_alloc=vm_alloc,
            vm_demand=vm_dem,
            vcpus=self.compute.vm_vcpus,
            stretch=stretch[ran_on],
            ran_on=ran_on,
            present=self.vms.present,
            down=self.faults.vm_down,
            host_failed=self.faults.failed,
            flow_rate=rate,
            flow_bytes=nbytes,
            vm_bytes=self.network.vm_bytes(nbytes),
            vm_wanted_bytes=self.network.vm_bytes(to_bytes(wanted), paths=("guest",)),
            nic_bytes=self.network.nic_bytes(nbytes),
            dom0_alloc=dom0_alloc,
            host_busy=host_busy,
            host_util=util,
            power=power,
            host_cores=self.compute.host_cores,
            migrating_s=self.migrations.migrating_s,
            moved_hosts_sla=moved,
        )
        self.sensors.count_step(use)

    def _charge_moves(self, host_busy, power, vm_given, vm_dem, dom0_alloc, ran_on, dt):
        """CloudSim's migration model: the hosts its migrations touched this step, charged piece by piece
        (sim/step_moves.py), their busy cores and watts set in place; returns (those hosts, their active
        seconds, their short seconds) for SLATAH."""
        cores = self.compute.host_cores
        asked = np.minimum(vm_dem, self.compute.vm_vcpus)
        running = self.vms.present & ~self.faults.vm_down
        pieces = host_pieces(self.migrations.moves, StepState(ran_on, vm_given, asked, running, dom0_alloc, cores), dt)
        hosts = np.unique(pieces.host)

        def over_step(per_piece: np.ndarray) -> np.ndarray:
            return np.bincount(pieces.host, weights=per_piece * pieces.seconds, minlength=self.n_hosts)[hosts]

        watts = self.power.piece_watts(pieces.host, pieces.busy / cores[pieces.host], pieces.active)
        host_busy[hosts] = over_step(pieces.busy) / dt
        power[hosts] = over_step(watts) / dt
        return hosts, over_step(pieces.active), over_step(pieces.short)

    def _storage_epoch(self) -> None:
        self.storage.epoch(self.compute.dom0_vcpus, self.netback_cpu, self.dt)

    # ------------------------------------------------------------------ workloads
    def _register_workload_flows(self) -> None:
        """Each kind's flows, then one read and one write stream per VM that does storage IO."""
        for kind, group in self.workloads.active():
            kind.register(group, self)
        io_vms = sorted({int(v) for kind, g in self.workloads.active() for v in kind.io_vms(g)})
        if io_vms and not self.storage_names:
            raise SimError("workloads do storage IO but the scenario has no [[storage]] server")
        self.network.add_io_flows(io_vms, self.storage_node)

    def _workload_demands(self, t: float, dt: float, run: np.ndarray) -> Demand:
        """CPU demand per VM and demand per flow for the step [t, t + dt), each kind adding its own."""
        src_vm, dst_vm = self.network.flow_vm_ends()
        ends_run = np.where(src_vm >= 0, run[np.maximum(src_vm, 0)], 1.0) * np.where(
            dst_vm >= 0, run[np.maximum(dst_vm, 0)], 1.0
        )
        n_flows = len(self.network.flows)
        step = Demand(
            t,
            dt,
            run,
            ends_run,
            np.full(self.n_vms, self.params["idle_guest_cpu"]),
            np.zeros(n_flows),
            np.ones(n_flows),
        )
        for kind, group in self.workloads.active():
            kind.demand(group, self, step)
        np.multiply(step.cpu, run, out=step.cpu)
        # a paused end stops the flow; an unlimited stream's demand is inf, and inf * 0 would be NaN
        np.multiply(step.flow, ends_run, out=step.flow, where=ends_run > 0)
        step.flow[ends_run <= 0] = 0.0
        return step
