"""The ``libvirt`` driver: real KVM/QEMU hosts behind the same observe/apply seam as the simulator.

observe() reads, per host, getAllDomainStats (CPU time, vCPU wait/delay, interface and block
counters and times, balloon) and the node's CPU counters, plus each guest agent's report (its own
/proc/net/dev and /proc/meminfo, the Sova paper's gray-box view, and how often its TCP senders were
held back, from which demand.py estimates the traffic each VM wanted) where a channel is reachable.
apply() starts actions and never raises: refusals and libvirt errors become failed outcomes.
Long actions (migration, VF unplug) run in the background and are polled; a migration that fails or
is cancelled leaves the VM running on its source with its VF back. A host whose daemon went away is
reconnected on the next call; while it is away it shows as it last answered (``host_seen`` says when),
with its VMs, and a VM of a failed host can be restarted elsewhere (libvirt_failover.py).

The driver is composed of parts that share one ``HostConnections`` (libvirt_hosts.py): ``vfs``
(VF hot-plug), ``migrations`` (background jobs), ``failover``, ``dirty_rates`` and ``io`` (the fast IO
loop's pair); the action handlers (libvirt_actions.py) call their public methods.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from sova.drivers.demand import ReceiveDemand, outbound_limit, path_alone
from sova.drivers.flow_counters import FlowCounters, vm_flows
from sova.drivers.guest_agent import GuestChannel, GuestReport
from sova.drivers.libvirt_actions import LIBVIRT_HANDLERS
from sova.drivers.libvirt_common import (
    GUEST_KINDS,
    MAC_RE,
    NS,
    DriverError,
    Refused,
    VmState,
    error_text,
    load_libvirt,
    quota_is_unlimited,
)
from sova.drivers.libvirt_dirty_rate import DirtyRates
from sova.drivers.libvirt_dom0 import DOM0_NAME, read_dom0_weight
from sova.drivers.libvirt_failover import HostFailover
from sova.drivers.libvirt_hosts import HostConnections
from sova.drivers.libvirt_io import LibvirtIo
from sova.drivers.libvirt_migration import MigrationJobs
from sova.drivers.libvirt_vfs import VfOperations
from sova.drivers.vf import EmulatedVfs, SriovHost, vf_mac
from sova.model.actions import (
    FAILED,
    OK,
    Action,
    AttachVF,
    DetachVF,
    Migrate,
    Outcome,
)
from sova.model.io_sample import IoSample, IoThrottle
from sova.model.snapshot import Snapshot, VmCounters, VmRequest

WANTED = ("guest_tx_wanted", "guest_rx_wanted")  # estimated from the others (demand.py), monotonic by construction
_DISK_TYPE_RE = re.compile(r"<disk type='(\w+)' device='disk'")  # a disk's backend: file, block, network, ...


class LibvirtDriver:
    """Hosts by name -> libvirt URI. See docs/libvirt.md for URIs, SR-IOV settings and what a host needs."""

    def __init__(
        self,
        hosts: dict[str, str],
        *,
        open_conn: Callable[[str], Any] | None = None,
        guest_socket: Callable[[str, str], str | None] | None = None,
        host_nic: Callable[[str], tuple[int, int] | None] | None = None,
        host_cpu: Callable[[str], tuple[float, int] | None] | None = None,
        sriov: dict[str, SriovHost] | None = None,
        emulated_vfs: EmulatedVfs | None = None,
        nic_bandwidth: float | dict[str, float] = 10e9,
        migration_uri: dict[str, str] | None = None,
        unsafe_migration: bool = False,
        dirty_rate_every: float = 10.0,
        flows: FlowCounters | None = None,
        shared_disks: bool = False,
    ):
        if not hosts:
            raise DriverError("the libvirt driver needs at least one host (--host NAME=URI)")
        for name, uri in hosts.items():
            if not re.match(r"^[a-z0-9+]+://", uri):
                raise DriverError(f"host {name}: {uri!r} is not a libvirt URI (e.g. qemu+ssh://root@node1/system)")
        binding = load_libvirt() if open_conn is None else None
        self.hosts = HostConnections(hosts, open_conn or binding.open, binding)  # type: ignore[union-attr]
        self.host_names = self.hosts.names
        self.unreachable = self.hosts.unreachable  # host -> why it cannot be reached, while it cannot
        self.guest_socket = guest_socket
        self.host_nic = host_nic
        self.host_cpu = host_cpu
        self.sriov = sriov or {}
        self.emulated = emulated_vfs
        self.nic_bandwidth = nic_bandwidth
        self.flows = flows
        self.shared_disks = shared_disks  # disk files and devices are on storage every host reaches
        self.vfs = VfOperations(self.hosts, self.sriov, emulated_vfs)
        self.migrations = MigrationJobs(self.hosts, self.vfs, migration_uri or {}, unsafe_migration)
        self.failover = HostFailover(self.hosts)
        self.dirty_rates = DirtyRates(self.hosts, dirty_rate_every)
        self.io = LibvirtIo(self.hosts)
        self.receive_demand = ReceiveDemand()

    # ------------------------------------------------------------------ connections
    def connect(self) -> None:
        """Open every host now; a clear error naming the host and URI if one cannot be reached."""
        for host in self.host_names:
            if self.hosts.conn(host) is None:
                raise DriverError(f"cannot reach host {host} at {self.hosts.uris[host]}: {self.unreachable[host]}")

    def close(self) -> None:
        self.hosts.close()

    def now(self) -> float:
        return self.hosts.now()

    def io_sample(self, vms) -> IoSample:
        return self.io.sample(vms)

    def set_io_throttle(self, throttle: IoThrottle) -> None:
        self.io.throttle(throttle)

    def poll(self, action: Action) -> Outcome:
        return self.migrations.poll(action)

    def cancel(self, action: Action) -> Outcome:
        return self.migrations.cancel(action)

    def guest_report(self, vm: str) -> GuestReport | None:
        """The newest report of a VM's guest agent, as of the last observe()."""
        vm_state = self.hosts.vms.get(vm)
        return vm_state.channel.latest if vm_state and vm_state.channel else None

    def guest_answers(self, vm: str) -> list[str]:
        """Every answer (pong, error) the VM's agent has sent since this driver first read it."""
        vm_state = self.hosts.vms.get(vm)
        return list(vm_state.channel.answers) if vm_state and vm_state.channel else []

    # ------------------------------------------------------------------ observe
    def requests(self) -> list[VmRequest]:
        """None here: VMs on real hosts are created by their owners (requests through Sova's API are coming)."""
        return []

    def observe(self) -> Snapshot:
        now = self.now()
        n_hosts = len(self.host_names)
        cores, mem, host_cpu = np.zeros(n_hosts), np.zeros(n_hosts), np.zeros(n_hosts)
        dom0_weight = np.full(n_hosts, np.nan)
        vfs_total = np.array([self.vfs.capacity(host_name) for host_name in self.host_names], dtype=float)
        rows: dict[str, tuple[int, Any, dict, bool]] = {}
        for hi, host in enumerate(self.host_names):
            conn = self.hosts.conn(host)
            if conn is None:
                continue
            try:
                info = conn.getInfo()
                cpu = conn.getCPUStats(-1)
                # NOWAIT: what is at hand now; a migrating domain's job would hold the call for seconds
                nowait = self.hosts.flag("VIR_CONNECT_GET_ALL_DOMAINS_STATS_NOWAIT", 1 << 29)
                records = conn.getAllDomainStats(0, nowait)
            except Exception as exc:
                self.hosts.lost(host, str(exc))
                continue
            self.failover.heard(host, now)
            mem[hi], cores[hi] = info[1], info[2]
            host_cpu[hi] = (cpu.get("kernel", 0) + cpu.get("user", 0)) * NS
            own = self.host_cpu(host) if self.host_cpu is not None else None
            if own is not None:  # hosts sharing one machine (the lab): each one's own CPU seconds and cores
                host_cpu[hi], cores[hi] = own
            dom0_weight[hi] = read_dom0_weight(conn)
            for dom, st in records:
                name = dom.name()
                if name == DOM0_NAME:
                    continue  # Xen lists its control domain among the domains: it is no guest
                running = st.get("state.state") == 1
                # mid-migration a VM exists on both hosts: the running copy is the real one
                if name not in rows or (running and not rows[name][3]):
                    rows[name] = (hi, dom, st, running)
        names = tuple(sorted(rows))
        n_vms = len(names)
        counters = {counter_name: np.zeros(n_vms) for counter_name in VmCounters.__dataclass_fields__}
        vm_host = np.zeros(n_vms, dtype=np.int64)
        vcpus, vmem, vmem_used, dirty = np.zeros(n_vms), np.zeros(n_vms), np.zeros(n_vms), np.zeros(n_vms)
        weight, cap, vf_rate = np.zeros(n_vms), np.zeros(n_vms), np.zeros(n_vms)
        nic: list[str] = []
        migrating = np.zeros(n_vms, dtype=bool)
        disk_local = np.zeros(n_vms, dtype=bool)
        vfs_used = np.zeros(n_hosts)
        sent, sent_extra = np.zeros(n_vms), np.zeros(n_vms)  # bytes sent, and wanted beyond them, this interval
        mac_owner: dict[str, int] = {}  # every MAC of every VM's NICs -> the VM's index
        where = self.hosts.where = {}
        vm_states = self.hosts.vms
        for vm_index, name in enumerate(names):
            hi, dom, st, _ = rows[name]
            host = self.host_names[hi]
            where[name] = host
            state = vm_states.setdefault(name, VmState(len(vm_states) + 1))
            st = state.stats = {**state.stats, **st}  # NOWAIT may leave out what a running job holds: keep the last
            vm_host[vm_index] = hi
            n_vcpu = int(st.get("vcpu.current", 1))
            vcpus[vm_index] = n_vcpu
            counters["cpu_time"][vm_index] = state.monotonic("cpu_time", st.get("cpu.time", 0) * NS)
            wait = sum(st.get(f"vcpu.{i}.delay", st.get(f"vcpu.{i}.wait", 0)) for i in range(n_vcpu)) * NS
            wait = state.monotonic("wait_time", wait)
            counters["wait_time"][vm_index] = wait
            if state.last is not None:
                dt = now - state.last[0]
                state.blocked += max(
                    0.0, n_vcpu * dt - (counters["cpu_time"][vm_index] - state.last[1]) - (wait - state.last[2])
                )
            state.last = (now, counters["cpu_time"][vm_index], wait)
            counters["blocked_time"][vm_index] = state.blocked
            vf_macs = {vf_mac(state.index)}
            xml = self.hosts.xml(dom)  # one read per VM and observation: every device question below uses it
            mac_owner.update((mac, vm_index) for mac in MAC_RE.findall(xml))
            disk_types = _DISK_TYPE_RE.findall(xml)
            disk_local[vm_index] = (
                not self.shared_disks
                and bool(disk_types)
                and all(disk_type in ("file", "block") for disk_type in disk_types)
            )
            self.failover.remember(state, dom)
            for i in range(int(st.get("net.count", 0))):
                if self.vfs.is_vf_interface(xml, host, i, st, vf_macs):
                    continue
                counters["vnic_rx_bytes"][vm_index] += st.get(f"net.{i}.rx.bytes", 0)
                counters["vnic_tx_bytes"][vm_index] += st.get(f"net.{i}.tx.bytes", 0)
                counters["vnic_rx_packets"][vm_index] += st.get(f"net.{i}.rx.pkts", 0)
                counters["vnic_tx_packets"][vm_index] += st.get(f"net.{i}.tx.pkts", 0)
            for i in range(int(st.get("block.count", 0))):
                counters["blk_rd_ops"][vm_index] += st.get(f"block.{i}.rd.reqs", 0)
                counters["blk_wr_ops"][vm_index] += st.get(f"block.{i}.wr.reqs", 0)
                counters["blk_rd_bytes"][vm_index] += st.get(f"block.{i}.rd.bytes", 0)
                counters["blk_wr_bytes"][vm_index] += st.get(f"block.{i}.wr.bytes", 0)
                counters["blk_time"][vm_index] += (
                    st.get(f"block.{i}.rd.times", 0) + st.get(f"block.{i}.wr.times", 0)
                ) * NS
            vmem[vm_index] = st.get("balloon.maximum", st.get("balloon.current", 0)) / 1024
            vmem_used[vm_index] = (st.get("balloon.available", 0) - st.get("balloon.usable", 0)) / 1024
            report = self._guest_report(host, xml, state)
            if report is not None:
                net_totals = [
                    sum(iface_counts[column] for iface, iface_counts in report.net.items() if iface != "lo")
                    for column in range(4)
                ]
                total, avail = report.meminfo.get("MemTotal"), report.meminfo.get("MemAvailable")
                used = (total - avail) / 2**20 if total and avail is not None else vmem_used[vm_index]
                state.guest = (*net_totals, used)
            if state.guest is not None:  # the newest gray-box view (held while a channel reconnects)
                rxb, rxp, txb, txp, vmem_used[vm_index] = state.guest
                counters["guest_rx_bytes"][vm_index], counters["guest_rx_packets"][vm_index] = rxb, rxp
                counters["guest_tx_bytes"][vm_index], counters["guest_tx_packets"][vm_index] = txb, txp
                if not state.from_agent:  # the first report: no jump from the host's view to the guest's
                    state.from_agent = True
                    for kind in GUEST_KINDS:
                        state.rebase(f"guest_{kind}", counters[f"guest_{kind}"][vm_index])
            else:  # no gray-box view yet: the guest's counters are what the host sees
                for kind in GUEST_KINDS:
                    counters[f"guest_{kind}"][vm_index] = counters[f"vnic_{kind}"][vm_index]
            for key in VmCounters.__dataclass_fields__:
                if key not in ("cpu_time", "wait_time", "blocked_time", *WANTED):
                    counters[key][vm_index] = state.monotonic(key, counters[key][vm_index])
            has_vf = self.vfs.has_vf(xml, vf_macs)
            # what it wanted to send: its carried bytes, or its path alone while its agent saw it held back
            path = path_alone(self._bandwidth(host), outbound_limit(xml, vf_macs), state.vf_rate, has_vf)
            sendq = report.sendq if report is not None else None
            counters["guest_tx_wanted"][vm_index] = state.send.update(
                now, counters["guest_tx_bytes"][vm_index], sendq, path
            )
            sent[vm_index], sent_extra[vm_index] = state.send.last_moved, state.send.last_extra
            dirty[vm_index] = self.dirty_rates.rate(name, dom, st, now)
            weight[vm_index], cap[vm_index] = self._cpu_tune(dom, n_vcpu)
            job = self.hosts.busy(name)
            kind = job.action.kind if job else ""
            nic.append({DetachVF.kind: "detaching", AttachVF.kind: "attaching"}.get(kind, "vf" if has_vf else "vnic"))
            vf_rate[vm_index] = state.vf_rate if has_vf else 0.0
            vfs_used[hi] += has_vf
            migrating[vm_index] = kind == Migrate.kind
        nic_rx, nic_tx = self._host_nic_counters(vm_host, counters)
        flow_src, flow_dst, flow_bytes = vm_flows(self.flows.totals() if self.flows else {}, mac_owner)
        # what it wanted to receive: its carried bytes and its senders' wanted beyond carried, by the matrix
        counters["guest_rx_wanted"] = self.receive_demand.update(
            names, counters["guest_rx_bytes"], sent, sent_extra, (flow_src, flow_dst, flow_bytes)
        )
        snap = Snapshot(
            time=now,
            hosts=self.host_names,
            vms=names,
            host_cores=cores,
            host_memory=mem,
            host_cpu_time=host_cpu,
            dom0_cpu_time=np.maximum(0.0, host_cpu - np.bincount(vm_host, counters["cpu_time"], n_hosts)),
            dom0_vcpus=cores.copy(),
            nic_bandwidth=np.array([self._bandwidth(host_name) for host_name in self.host_names]),
            nic_rx_bytes=nic_rx,
            nic_tx_bytes=nic_tx,
            vfs_total=vfs_total,
            vfs_used=vfs_used,
            vm_host=vm_host,
            vm_vcpus=vcpus,
            vm_memory=vmem,
            vm_memory_used=vmem_used,
            vm_dirty_rate=dirty,
            vm_weight=weight,
            vm_cap=cap,
            vm_nic=tuple(nic),
            vm_vf_rate=vf_rate,
            vm_migrating=migrating,
            counters=VmCounters(**counters),
            flow_src=flow_src,
            flow_dst=flow_dst,
            flow_bytes=flow_bytes,
            dom0_weight=dom0_weight,
            vm_disk_local=disk_local,
        )
        return self.failover.hold_silent(snap)

    def _bandwidth(self, host: str) -> float:
        if host in self.sriov:
            return self.sriov[host].bandwidth
        if self.emulated:
            return self.emulated.bandwidth
        bw = self.nic_bandwidth
        return bw.get(host, 10e9) if isinstance(bw, dict) else bw

    def _host_nic_counters(self, vm_host: np.ndarray, counters: dict) -> tuple[np.ndarray, np.ndarray]:
        """The physical port's counters from host_nic; else the VMs' own traffic summed (all of it
        leaving the host: an upper bound that ignores VM-to-VM traffic inside a host)."""
        n_hosts = len(self.host_names)
        rx = np.bincount(vm_host, counters["guest_rx_bytes"], n_hosts)
        tx = np.bincount(vm_host, counters["guest_tx_bytes"], n_hosts)
        if self.host_nic is not None:
            for hi, host in enumerate(self.host_names):
                got = self.host_nic(host)
                if got is not None:
                    rx[hi], tx[hi] = got
        return rx, tx

    def _guest_report(self, host: str, xml: str, state: VmState):
        """The guest agent's latest report, over a channel to the socket its domain has now: a VM that moved
        (and maybe back, unseen between two observations) is a new QEMU with a socket of its own."""
        if self.guest_socket is None:
            return None
        bound = re.search(r"<source mode='bind' path='([^']+org\.sova\.agent\.0)'/>", xml)
        path = self.guest_socket(host, bound.group(1)) if bound else None
        if state.channel is None or state.channel_host != host or state.channel.path != path:
            answers = state.channel.answers if state.channel else []
            if state.channel:
                state.channel.close()
            state.channel = GuestChannel(path) if path else None
            state.channel_host = host
            if state.channel is not None:
                state.channel.answers = answers  # the same guest on its new host
        return state.channel.poll() if state.channel else None

    def _cpu_tune(self, dom, n_vcpu: int) -> tuple[float, float]:
        try:
            tune = dom.schedulerParametersFlags(0)
        except Exception:
            return 0.0, 0.0
        quota, period = tune.get("vcpu_quota", -1), tune.get("vcpu_period", 0)
        cap = 0.0 if quota_is_unlimited(quota) or period <= 0 else quota * n_vcpu / period
        return float(tune.get("cpu_shares", tune.get("weight", 0))), cap  # KVM's shares; Xen's credit weight

    # ------------------------------------------------------------------ apply
    def apply(self, action: Action) -> Outcome:
        now = self.now()
        try:
            return self._apply(action, now)
        except Exception as exc:  # libvirtError and friends: a failed outcome, never an exception
            return Outcome(FAILED, error_text(exc), started=now, finished=now)

    def _apply(self, action: Action, now: float) -> Outcome:
        """One action on its VM's host through its kind's handler (``libvirt_actions``); one at a time per VM."""
        vm = getattr(action, "vm", "")
        job = self.hosts.busy(vm) if vm else None
        if job is not None:
            return Outcome(FAILED, f"{vm} already has a {job.action.kind} in progress", now, now)
        handler = LIBVIRT_HANDLERS.of(action)
        try:
            host, dom = self.hosts.dom(vm) if handler.needs_domain else (None, None)
            return handler.apply(self, action, now, host, dom) or Outcome(OK, "applied", now, self.now())
        except Refused as refusal:
            return Outcome(FAILED, str(refusal), now, now)
