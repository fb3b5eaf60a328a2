"""A cluster as a scenario: the manager's Knowledge (hosts and their capacities, VMs and where they run, VFs,
rules, storage SLOs, flows, the last minutes of per-VM demand) as an ordinary scenario file the simulator runs.

Each VM's demand is what its counters say it asked for, sample by sample (``model/observed_demand``), replayed
by the `observed` workload kind; past the window, the kind's stated forecast. What a snapshot cannot tell is
assumed and listed in the file's description: hosts are on, with their hardware threads as cores; the storage
is one server with the simulator's defaults (unless an inventory gives it); the fabric is the inventory's, or
one switch at the fastest NIC's speed; web requests are network and CPU demand (no response times).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sova.model.knowledge import Knowledge
from sova.model.observed_demand import VM_COLUMNS, ObservedDemand
from sova.model.placement_rules import RuleBook
from sova.model.scenario import HostSpec, Scenario, TopologySpec
from sova.model.snapshot import Snapshot
from sova.model.snapshot_align import aligned
from sova.model.storage_slo import StorageSlo

STORAGE = "storage"  # the one storage server an exported scenario has
ASSUMED = (
    "hosts are on, with their hardware threads as cores; storage is one server with the simulator's defaults; "
    "web requests are seen as CPU and network demand, without response times"
)


class SnapshotError(ValueError):
    """The Knowledge holds too little to export."""


@dataclass(frozen=True)
class ExportSettings:
    window: float = 600.0  # s of history the demand series cover (at most what the Knowledge keeps)
    interval: float = 10.0  # s per sample
    after: str = "last"  # past the window: last | mean | ar (the observed kind's forecast)
    duration: float = 1800.0  # s the exported scenario runs
    step: float = 1.0


def observed_demand(knowledge: Knowledge, settings: ExportSettings) -> ObservedDemand:
    """The latest snapshot's VMs' demand over the window, one sample per `interval`: each a rate between the
    snapshots at the sample's ends, re-indexed like the latest (a VM that came meanwhile counts from its
    first snapshot). A sample needs a snapshot at each end: an interval below the snapshots' spacing is
    refused, as its samples would read nothing between two ends on one snapshot."""
    latest = knowledge.latest
    kept = knowledge.snapshots
    covered = min(settings.window, latest.time - kept[0].time)
    samples = math.floor(covered / settings.interval + 1e-9)
    if samples < 2:
        raise SnapshotError(
            f"the Knowledge holds {latest.time - kept[0].time:g} s of history; expected at least two samples of "
            f"{settings.interval:g} s (a shorter --window and --interval, or wait)"
        )
    first = knowledge.at_or_before(latest.time - samples * settings.interval) or kept[0]  # the first sample's start
    times = np.array([snap.time for snap in knowledge.since(first.time)])
    spacing = float(np.diff(times).max()) if len(times) > 1 else 0.0
    if spacing > settings.interval + 1e-9:
        raise SnapshotError(
            f"the Knowledge's snapshots are up to {spacing:g} s apart in the window; expected an --interval of at "
            f"least that ({settings.interval:g} s asked)"
        )
    ends = [latest.time - (samples - k) * settings.interval for k in range(samples + 1)]
    snaps = [knowledge.at_or_before(end) or kept[0] for end in ends[:-1]]
    snaps = [aligned(snap, latest, knowledge.after(snap.time)) for snap in snaps] + [latest]
    rates = [_rates(older, newer) for older, newer in itertools.pairwise(snaps)]
    series = {column: np.stack([rate[column] for rate in rates], axis=1) for column in VM_COLUMNS}
    pairs, pair_of_flow, inside = _pairs(latest)
    sender = latest.flow_src[inside]
    flow_bits = np.stack(
        [np.bincount(pair_of_flow, rate["flows"][inside] * rate["tx_scale"][sender], len(pairs)) for rate in rates],
        axis=1,
    )  # bit/s per pair, its flows summed, scaled up where the sender was held back
    return ObservedDemand(
        settings.interval,
        ends[0],
        latest.vms,
        series,
        tuple(latest.vms[src] for src, _ in pairs),
        tuple(latest.vms[dst] for _, dst in pairs),
        flow_bits if pairs else None,
    )


def _rates(old: Snapshot, new: Snapshot) -> dict[str, np.ndarray]:
    """Per VM of `new`: what it asked for between the two snapshots."""
    dt = max(new.time - old.time, 1e-9)

    def rate(counter: str) -> np.ndarray:
        return np.maximum(getattr(new.counters, counter) - getattr(old.counters, counter), 0.0) / dt

    cores = np.clip(rate("cpu_time") + rate("wait_time"), 0.0, new.vm_vcpus)  # run plus runnable: what it wanted
    tx = np.maximum(rate("guest_tx_bytes"), rate("vnic_tx_bytes")) * 8
    rx = np.maximum(rate("guest_rx_bytes"), rate("vnic_rx_bytes")) * 8
    flows = np.maximum(new.flow_bytes - old.flow_bytes, 0.0) * 8 / dt if len(new.flow_bytes) else np.zeros(0)
    inside = new.flow_dst >= 0
    n_vms = len(new.vms)
    sent_inside = np.bincount(new.flow_src[inside], flows[inside], n_vms) if len(flows) else np.zeros(n_vms)
    got_inside = np.bincount(new.flow_dst[inside], flows[inside], n_vms) if len(flows) else np.zeros(n_vms)
    tx_out, tx_scale = _wanted(np.maximum(tx - sent_inside, 0.0), tx, rate("guest_tx_wanted") * 8)
    rx_out, _ = _wanted(np.maximum(rx - got_inside, 0.0), rx, rate("guest_rx_wanted") * 8)
    return {
        "cpu": cores,
        "memory_used": np.asarray(new.vm_memory_used, dtype=float).copy(),
        "read_iops": rate("blk_rd_ops"),
        "write_iops": rate("blk_wr_ops"),
        "read_bps": rate("blk_rd_bytes"),
        "write_bps": rate("blk_wr_bytes"),
        "tx_bits": tx_out,
        "rx_bits": rx_out,
        "io_outstanding": rate("blk_time"),  # Little's law: the IOs' summed time per second is the mean in flight
        "flows": flows,
        "tx_scale": tx_scale,
    }


def _wanted(outside: np.ndarray, carried: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Traffic to (or from) outside as the guest wanted it, and the factor by which it wanted more than it
    carried (1 where it carried all it wanted): a sender held back wanted more on each of its paths. A guest
    that carried nothing and wanted some wanted it all to outside (no flow says where)."""
    scale = np.where(carried > 0, np.maximum(wanted / np.where(carried > 0, carried, 1.0), 1.0), 1.0)
    return np.where(carried > 0, outside * scale, wanted), scale


def _pairs(snap: Snapshot) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray]:
    """The (source, destination) VM pairs with a flow between them, in order of first appearance; the pair of
    each flow between VMs; and which flows those are."""
    inside = np.flatnonzero(snap.flow_dst >= 0)
    ends = list(zip(snap.flow_src[inside].tolist(), snap.flow_dst[inside].tolist(), strict=True))
    pairs = list(dict.fromkeys(ends))
    position = {pair: k for k, pair in enumerate(pairs)}
    return pairs, np.array([position[pair] for pair in ends], dtype=np.int64), inside


def export_snapshot(
    knowledge: Knowledge, settings: ExportSettings, name: str, demand_file: str, **document: Any
) -> tuple[dict[str, Any], ObservedDemand]:
    """The scenario's tables and its demand series (`scenario_document`'s keywords in `document`)."""
    demand = observed_demand(knowledge, settings)
    covered = dataclasses.replace(settings, window=demand.length)  # what the Knowledge held, at most the window
    return scenario_document(knowledge, name, demand_file, covered, **document), demand


def scenario_document(
    knowledge: Knowledge,
    name: str,
    demand_file: str,
    settings: ExportSettings,
    profiles: dict[str, dict[str, Any]] | None = None,
    slos: tuple[tuple[str, StorageSlo], ...] = (),
    simulator: dict[str, Any] | None = None,
    control: dict[str, Any] | None = None,
    source: str = "",
    inventory: Scenario | None = None,
) -> dict[str, Any]:
    """The scenario file's tables (TOML-ready): the latest snapshot's hosts and VMs, one observed workload over
    them all reading `demand_file`, the Knowledge's fabric and rules, the SLOs and the profiles given.
    `inventory`: what an operator's inventory says beyond what hosts report (a scenario's: its hosts'
    hyper-threads and hypervisor, its storage servers and which VM's disk is on which); None: the defaults."""
    snap = knowledge.latest
    storage = inventory.storage if inventory is not None else ()
    hosts_known = {host.name: host for host in inventory.hosts} if inventory is not None else {}
    disk_on = {vm.name: vm.storage or storage[0].name for vm in inventory.vms} if storage else {}
    description = (
        f"The cluster as {source or 'a manager'} saw it at {snap.time:g} s: {len(snap.hosts)} hosts, "
        f"{len(snap.vms)} VMs, their demand over the last {settings.window:g} s replayed and then forecast "
        f"({settings.after}). Assumed: {ASSUMED}."
    )
    document: dict[str, Any] = {
        "scenario": {
            "name": name,
            "description": description,
            "duration": settings.duration,
            "step": settings.step,
        },
        "topology": _topology(knowledge.topology, snap),
        "hosts": [_host(snap, h, hosts_known.get(snap.hosts[h])) for h in range(len(snap.hosts))],
        "storage": [dataclasses.asdict(server) for server in storage] or [{"name": STORAGE}],
        "vms": [_vm(snap, v, disk_on.get(snap.vms[v], STORAGE)) for v in range(len(snap.vms))],
        "workloads": [{"vm": "*", "kind": "observed", "file": demand_file, "after": settings.after}],
        "profiles": profiles or {"nothing": {"policies": []}},
    }
    if simulator:
        document["simulator"] = dict(simulator)
    if control:
        document["control"] = dict(control)
    if knowledge.rules:
        document["rules"] = _rules(knowledge.rules)
    if slos:
        document["slos"] = [_slo(vm, slo) for vm, slo in slos if vm in snap.vm_position]
    return document


def _topology(topology: TopologySpec | None, snap: Snapshot) -> dict[str, Any]:
    if topology is None:
        fastest = float(np.max(snap.nic_bandwidth)) if len(snap.hosts) else 10e9
        return {"kind": "single-switch", "link_speed": fastest}
    return dataclasses.asdict(topology)


def _host(snap: Snapshot, h: int, spec: HostSpec | None) -> dict[str, Any]:
    host: dict[str, Any] = {
        "name": snap.hosts[h],
        "cores": int(snap.host_cores[h]),
        "memory": float(snap.host_memory[h]),
        "dom0_memory": 0.0,  # the snapshot's memory is what guests can have
        "dom0_vcpus": int(snap.dom0_vcpus[h]),
        "nic": {
            "bandwidth": float(snap.nic_bandwidth[h]),
            "sriov": bool(snap.vfs_total[h] > 0),
            "max_vfs": int(snap.vfs_total[h]),
        },
    }
    if snap.dom0_weight is not None and np.isfinite(snap.dom0_weight[h]):
        host["dom0_weight"] = max(int(snap.dom0_weight[h]), 1)
    if snap.host_core_mips is not None and snap.host_core_mips[h] > 0:
        host["mips"] = float(snap.host_core_mips[h])
    if snap.host_power_curve is not None and np.isfinite(snap.host_power_curve[h]).all():
        host["power_model"] = "custom"
        host["power_curve"] = [float(watts) for watts in snap.host_power_curve[h]]
    if spec is not None:  # the inventory's word on what hosts do not report
        host["threads_per_core"], host["hypervisor"] = spec.threads_per_core, spec.hypervisor
    return host


def _vm(snap: Snapshot, v: int, storage: str) -> dict[str, Any]:
    vm: dict[str, Any] = {
        "name": snap.vms[v],
        "host": snap.hosts[snap.vm_host[v]],
        "vcpus": int(snap.vm_vcpus[v]),
        "memory": float(snap.vm_memory[v]),
        "weight": max(int(snap.vm_weight[v]), 1),
        "cap": float(snap.vm_cap[v]),
        "dirty_rate": float(snap.vm_dirty_rate[v]),
        "storage": storage,
    }
    if snap.vm_nic[v] == "vf":
        vm["nic"] = "vf"
        vm["vf_rate"] = float(snap.vm_vf_rate[v])
    if snap.vm_mips is not None and snap.vm_mips[v] > 0:
        vm["mips"] = float(snap.vm_mips[v])
    return vm


def _rules(book: RuleBook) -> list[dict[str, Any]]:
    return [
        {
            "name": rule.name,
            "kind": rule.kind,
            "vms": list(rule.vms),
            **({"hosts": list(rule.hosts)} if rule.hosts else {}),
            "strength": "must" if rule.must else "should",
        }
        for rule in book.rules
    ]


def _slo(vm: str, slo: StorageSlo) -> dict[str, Any]:
    entry: dict[str, Any] = {"vm": vm}
    for key in ("throughput", "io_size", "sc_rate", "pf_ratio"):
        value = getattr(slo, key)
        if value is not None:
            entry[key] = [float(value[0]), float(value[1])]
    if slo.latency is not None:
        entry["latency"] = float(slo.latency)
    return entry


def write_snapshot(scenario_file: Path, demand_path: Path, document: dict, demand: bytes) -> None:
    """The demand file, then the scenario file, each written whole (a temporary renamed over it)."""
    import tomli_w

    from sova.model.atomic_file import write_atomically

    text = tomli_w.dumps(document)  # first: a document TOML cannot hold leaves both files as they were
    write_atomically(demand_path, demand)
    write_atomically(scenario_file, text)
