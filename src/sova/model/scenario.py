"""Scenario files: the TOML format, its validation, and the plain dataclasses a run is built from.

``load_scenario(path)`` reads and validates a whole file and raises ``InputError`` with every
problem found (file, table, key, what was expected). Policy names and their parameters are checked
one floor up (``sova.control.profiles``), because the policy registry lives there.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sova.model.schema import REQUIRED, Field, InputError, Problem, Reader

TOPOLOGY_KINDS = ("single-switch", "leaf-spine", "fat-tree", "three-tier")
WORKLOAD_KINDS = (
    "lookbusy",
    "netperf",
    "httperf",
    "web",
    "mapreduce",
    "fio",
    "transfer",
    "batch",
    "planetlab",
    "bitbrains",
)
MODES = ("auto", "approve", "dry-run")
AUTO_HOSTS = ("auto", "random")

SCENARIO_FIELDS = {
    "name": Field("str", REQUIRED, "short name of the scenario, used in reports"),
    "description": Field("str", "", "one paragraph saying what the scenario shows"),
    "duration": Field("duration", REQUIRED, "simulated time to run", lo=0, lo_open=True),
    "step": Field("duration", 1.0, "simulator time step", lo=0.001, hi=60),
    "seed": Field("int", 1, "random seed; the same seed gives the same run", lo=0),
}

TOPOLOGY_FIELDS = {
    "kind": Field("str", "single-switch", "shape of the fabric", choices=TOPOLOGY_KINDS),
    "link_speed": Field("bandwidth", 10e9, "speed of host links (and of all links unless set below)", lo=0),
    "uplink_speed": Field("bandwidth", 0.0, "leaf-spine / fat-tree: switch-to-switch links (0: link_speed)"),
    "latency_per_hop": Field("duration", 2e-6, "one-way latency per switch hop", lo=0),
    "leaves": Field("int", 4, "leaf-spine: number of leaf (ToR) switches", lo=1),
    "spines": Field("int", 2, "leaf-spine: number of spine switches (ECMP over them)", lo=1),
    "hosts_per_leaf": Field("int", 8, "leaf-spine: hosts under each leaf", lo=1),
    "k": Field("int", 4, "fat-tree: switch radix k (k^3/4 hosts at full size)", lo=2),
    "hosts_per_edge": Field("int", 0, "fat-tree: hosts per edge switch (0: k/2; more oversubscribes)", lo=0),
    "racks": Field("int", 4, "three-tier: number of racks (ToR switches)", lo=1),
    "hosts_per_rack": Field("int", 20, "three-tier: hosts per rack", lo=1),
    "racks_per_agg": Field("int", 2, "three-tier: racks under each aggregation switch", lo=1),
    "tor_oversubscription": Field("float", 1.0, "three-tier: ToR-to-aggregation oversubscription", lo=1),
    "agg_oversubscription": Field("float", 1.0, "three-tier: aggregation-to-core oversubscription", lo=1),
    "external_speed": Field("bandwidth", 100e9, "link from the top of the fabric to the outside world", lo=0),
}

NIC_FIELDS = {
    "bandwidth": Field("bandwidth", 10e9, "physical port speed (10 GbE by default)", lo=0, lo_open=True),
    "sriov": Field("bool", True, "whether the NIC can expose SR-IOV virtual functions"),
    "max_vfs": Field("int", 63, "VFs per port (an Intel 82599 port has up to 63)", lo=0, hi=256),
}

HOST_FIELDS = {
    "name": Field("str", REQUIRED, "host name; with count, a pattern with {i} (1-based)"),
    "count": Field("int", 1, "how many hosts this entry makes", lo=1),
    "start": Field("int", 1, "the first {i} of a counted entry", lo=0),
    "cores": Field("int", 16, "hardware threads the hypervisor schedules on", lo=1),
    "ghz": Field("float", 2.6, "clock speed, for reports", lo=0, lo_open=True),
    "memory": Field("memory", 65536.0, "RAM (64 GiB by default)", lo=0, lo_open=True),
    "dom0_vcpus": Field("int", 2, "vCPUs of the control domain (Dom0 / host networking)", lo=1),
    "dom0_weight": Field("int", 256, "scheduler weight of Dom0 (Xen credit default 256)", lo=1),
    "dom0_memory": Field("memory", 4096.0, "memory reserved for Dom0", lo=0),
    "power_idle": Field("float", 100.0, "power at idle, W (linear power model)", lo=0),
    "power_max": Field("float", 250.0, "power at full CPU, W", lo=0),
    "nic": Field("table", {}, "the physical NIC: bandwidth, sriov, max_vfs"),
}

STORAGE_FIELDS = {
    "name": Field("str", REQUIRED, "storage server name"),
    "device": Field("str", "ssd", "device model", choices=("ssd", "disk-array")),
    "parallelism": Field("int", 0, "IOs served at once (0: 8 for both models)", lo=0),
    "access_time": Field("duration", 0.0, "per-IO access time (0: 100 us SSD, 8 ms disk)", lo=0),
    "bandwidth": Field("bandwidth", 0.0, "media transfer rate (0: 4 Gb/s SSD, 1.2 Gb/s per disk)", lo=0),
    "link_speed": Field("bandwidth", 40e9, "the server's link into the fabric", lo=0, lo_open=True),
}

VM_FIELDS = {
    "name": Field("str", REQUIRED, "VM name; with count, a pattern with {i} (1-based)"),
    "count": Field("int", 1, "how many VMs this entry makes (0: none, e.g. at one end of a sweep)", lo=0),
    "start": Field("int", 1, "the first {i} of a counted entry", lo=0),
    "host": Field(
        "str", "auto", "initial host, 'auto' (round-robin over hosts with room) or 'random' (seeded, with room)"
    ),
    "vcpus": Field("int", 1, "virtual CPUs", lo=1),
    "memory": Field("memory", 1024.0, "memory (1 GiB by default)", lo=1),
    "disk": Field("size", 10 * 1024**3, "disk size", lo=0),
    "nic": Field("str", "vnic", "starting NIC mode: para-virtual vNIC or SR-IOV VF", choices=("vnic", "vf")),
    "vf_rate": Field("bandwidth", 0.0, "rate cap of the VF if it starts with one (0: none)", lo=0),
    "weight": Field("int", 256, "CPU scheduler weight (shares)", lo=1),
    "cap": Field("float", 0.0, "CPU cap in cores (0: no cap)", lo=0),
    "storage": Field("str", "", "storage server holding its disk ('' : the first one)"),
    "dirty_rate": Field("size", 5e6, "memory dirtied per second by the guest (bytes/s), for migration", lo=0),
    "wss": Field("memory", 0.0, "writable working set that caps a pre-copy round (0: all memory)", lo=0),
}

# Per workload kind: the parameters a phase may change, with defaults.
WORKLOAD_PARAMS: dict[str, dict[str, Field]] = {
    "lookbusy": {
        "duty": Field("float", 1.0, "fraction of the time the burner runs", lo=0, hi=1),
        "util": Field("float", 1.0, "CPU load of each vCPU while running", lo=0, hi=1),
        "period": Field("duration", 10.0, "on/off period of the duty cycle", lo=0, lo_open=True),
    },
    "netperf": {
        "duty": Field("float", 1.0, "fraction of the time the stream runs", lo=0, hi=1),
        "rate": Field("bandwidth", 0.0, "offered rate while running (0: as fast as TCP goes)", lo=0),
        "period": Field("duration", 10.0, "on/off period of the duty cycle", lo=0, lo_open=True),
        "peer": Field(
            "str", "external", "the other end: a VM name, 'external', or a pattern like 'cli{i}' (i: own number)"
        ),
        "direction": Field("str", "tx", "tx: the VM sends; rx: it receives", choices=("tx", "rx")),
    },
    "httperf": {
        "client": Field("str", "external", "request source: a VM name, 'external', or a pattern like 'cli{i}'"),
        "rate": Field("float", 100.0, "requests per second", lo=0),
        "page": Field("size", 10240.0, "response size", lo=1),
        "request": Field("size", 300.0, "request size", lo=1),
        "cpu_per_request": Field("duration", 50e-6, "server CPU time per request", lo=0),
        "timeout": Field("duration", 5.0, "client timeout; slower requests count as errors", lo=0, lo_open=True),
    },
    "web": {
        "web": Field("str", REQUIRED, "web VMs this client sends to: a name, a glob ('s1-web*') or 'web{i}'"),
        "cache": Field("str", "", "cache VMs each web request calls, a name or glob ('' : none)"),
        "concurrency": Field("int", 20, "requests the client keeps outstanding", lo=1),
        "request": Field("size", 750.0, "request size, client to web", lo=1),
        "page": Field("size", 33660.0, "response size, web to client", lo=1),
        "calls": Field("int", 10, "sequential cache requests per web request, to random cache VMs", lo=0),
        "call_request": Field("size", 100.0, "cache request size", lo=1),
        "call_response": Field("size", 500.0, "cache response size", lo=1),
        "cpu_per_request": Field("duration", 1e-3, "web VM CPU time per request", lo=0),
        "cpu_per_call": Field("duration", 20e-6, "cache VM CPU time per call", lo=0),
    },
    "mapreduce": {
        "map": Field("float", 60.0, "map work per VM, core-seconds", lo=0),
        "shuffle": Field("size", 100e6, "bytes each VM sends in the shuffle, evenly to the job's other VMs", lo=0),
        "reduce": Field("float", 30.0, "reduce work per VM, core-seconds", lo=0),
        "cores": Field("float", 0.0, "cores a VM keeps busy in map and reduce (0: all vCPUs)", lo=0),
        "think": Field("duration", 10.0, "pause between runs of the job (tear-down and set-up)", lo=0),
    },
    "fio": {
        "iops": Field("float", 100.0, "IO operations per second offered", lo=0),
        "size": Field("size", 4096.0, "IO size", lo=512),
        "read": Field("float", 0.7, "fraction of reads", lo=0, hi=1),
    },
    "transfer": {
        "size": Field("size", 1e9, "bytes to copy, once (scp of a file)", lo=1),
        "peer": Field("str", "external", "where the file goes: a VM name, 'external', or a pattern like 'srv{i}'"),
        "start": Field("duration", 0.0, "when the copy starts", lo=0),
        "cpu_per_byte": Field("duration", 4e-9, "sender CPU per byte on top of the network stack (scp's cipher)", lo=0),
    },
    "batch": {
        "work": Field("float", 60.0, "CPU work per job, core-seconds", lo=0, lo_open=True),
        "cores": Field("float", 0.0, "cores a running job keeps busy (0: all vCPUs)", lo=0),
        "think": Field("duration", 0.0, "pause between jobs", lo=0),
    },
    "planetlab": {
        "file": Field("str", REQUIRED, "a PlanetLab per-VM file (288 CPU % samples); relative to the scenario"),
        "interval": Field("duration", 300.0, "seconds per sample", lo=0, lo_open=True),
        "scale": Field("float", 1.0, "multiplier on the trace's CPU %", lo=0),
        "offset": Field("duration", 0.0, "start this far into the trace", lo=0),
    },
    "bitbrains": {
        "file": Field("str", REQUIRED, "a Bitbrains GWA-T-12 VM CSV, or 'ARCHIVE.tar.gz:MEMBER'"),
        "interval": Field("duration", 300.0, "seconds per sample", lo=0, lo_open=True),
        "scale": Field("float", 1.0, "multiplier on CPU, disk and network", lo=0),
        "offset": Field("duration", 0.0, "start this far into the trace", lo=0),
    },
}
STRUCTURAL_PARAMS = {
    "peer",
    "direction",
    "client",
    "file",
    "interval",
    "offset",
    "start",
    # a web stream's bytes per request are fixed when its flows are tied together
    "web",
    "cache",
    "request",
    "page",
    "calls",
    "call_request",
    "call_response",
}

WORKLOAD_FIELDS = {
    "vm": Field("str", REQUIRED, "VM that runs it: a name or a glob pattern ('web*')"),
    "kind": Field("str", REQUIRED, "what runs", choices=WORKLOAD_KINDS),
    "stagger": Field("bool", True, "start each VM's duty cycle at a random (seeded) point of its period"),
}

PROFILE_FIELDS = {
    "policies": Field("list[str]", [], "policies to run, by registered name"),
    "mode": Field("str", "auto", "executor mode", choices=MODES),
    "params": Field("table", {}, "per-policy parameters: [profiles.NAME.params.POLICY]"),
}

CONTROL_FIELDS = {
    "monitor_period": Field("duration", 1.0, "how often sensors are read", lo=0, lo_open=True),
    "history": Field("int", 600, "snapshots kept in the Knowledge", lo=2),
    "max_migrations_per_host": Field("int", 1, "concurrent migrations touching one host", lo=1),
    "max_migrations_cluster": Field("int", 4, "concurrent migrations in the whole cluster", lo=1),
    "hold_down": Field("duration", 300.0, "a migrated VM is not moved again for this long", lo=0),
    "action_timeout": Field("duration", 600.0, "a running action is cancelled after this long", lo=0, lo_open=True),
    "approval_timeout": Field("duration", 300.0, "approve mode: plans expire unapproved after this", lo=0),
    "cpu_headroom": Field("float", 0.9, "a migration must leave the destination under this CPU load", lo=0, hi=1),
}

OUTPUT_FIELDS = {
    "per_vm": Field("bool", False, "also write per-VM metrics per step (large for big scenarios)"),
    "plots": Field("bool", True, "write PNG plots and embed them in report.html"),
    "sample_every": Field("duration", 0.0, "metrics row interval (0: every step)", lo=0),
    "intensity": Field("bool", False, "report IF, NF, io_degree and net_degree of every VM over the whole run"),
}

TRIALS_FIELDS = {
    "count": Field("int", 25, "random initial placements, each a trial (the paper: 25 or 50)", lo=1),
    "slots": Field("int", 4, "VMs a host may hold in the Random placements (the paper: 4)", lo=1),
    "warmup": Field("duration", 10.0, "seconds of each run left out of its measurement and outcome", lo=0),
    "iterations": Field("int", 1, "measure-optimize-run rounds per trial and algorithm (Fig. 6: 4)", lo=1),
}

SIMULATOR_FIELDS = {
    "protocol_efficiency": Field("float", 1448 / 1538, "payload share of a link's bit rate (TCP/IPv4, 1500 MTU)"),
    "packet_payload": Field("size", 1448.0, "payload bytes per packet (MSS)", lo=1),
    "dom0_cost_per_packet": Field("duration", 2.2e-6, "Dom0 CPU per packet crossing a netback", lo=0),
    "dom0_cost_per_byte": Field("duration", 0.1e-9, "Dom0 CPU per byte crossing a netback", lo=0),
    "dom0_vif_overhead": Field("float", 0.0016, "Dom0 cost grows this much per extra active vNIC", lo=0),
    "guest_cost_per_packet": Field("duration", 0.5e-6, "guest CPU per packet (TCP stack + driver)", lo=0),
    "guest_cost_per_byte": Field("duration", 0.25e-9, "guest CPU per byte", lo=0),
    "pv_latency": Field("duration", 30e-6, "latency added by each Dom0 crossing (event channel)", lo=0),
    "vf_latency": Field("duration", 5e-6, "latency added by a VF (DMA + interrupt)", lo=0),
    "idle_guest_cpu": Field("float", 0.005, "cores an idle guest uses (timer ticks)", lo=0),
    "sched_overhead": Field("float", 0.15, "slowdown per runnable vCPU per hardware thread above one", lo=0),
    "rate_limit_burst": Field("size", 65536.0, "token-bucket burst of a VF rate tier or vNIC limit", lo=0),
    "vf_attach_time": Field("duration", 0.2, "hot-plug of a VF", lo=0),
    "vf_detach_time": Field("duration", 1.5, "hot-unplug of a VF (device-removed event)", lo=0),
    "migration_bandwidth": Field("bandwidth", 0.0, "cap of a migration stream (0: unlimited, as libvirt)", lo=0),
    "migration_downtime_limit": Field("duration", 0.3, "stop pre-copy when the rest fits in this", lo=0),
    "migration_max_rounds": Field("int", 30, "pre-copy round cap", lo=1),
    "migration_max_factor": Field("float", 3.0, "stop pre-copy after sending this times memory", lo=1),
    "migration_resume_time": Field("duration", 0.02, "time to resume the VM at the destination", lo=0),
}


@dataclass(frozen=True)
class TopologySpec:
    kind: str = "single-switch"
    link_speed: float = 10e9
    uplink_speed: float = 0.0
    latency_per_hop: float = 2e-6
    leaves: int = 4
    spines: int = 2
    hosts_per_leaf: int = 8
    k: int = 4
    hosts_per_edge: int = 0
    racks: int = 4
    hosts_per_rack: int = 20
    racks_per_agg: int = 2
    tor_oversubscription: float = 1.0
    agg_oversubscription: float = 1.0
    external_speed: float = 100e9


@dataclass(frozen=True)
class NicSpec:
    bandwidth: float = 10e9
    sriov: bool = True
    max_vfs: int = 63


@dataclass(frozen=True)
class HostSpec:
    name: str
    cores: int = 16
    ghz: float = 2.6
    memory: float = 65536.0
    dom0_vcpus: int = 2
    dom0_weight: int = 256
    dom0_memory: float = 4096.0
    power_idle: float = 100.0
    power_max: float = 250.0
    nic: NicSpec = field(default_factory=NicSpec)


@dataclass(frozen=True)
class StorageSpec:
    name: str
    device: str = "ssd"
    parallelism: int = 8
    access_time: float = 100e-6
    bandwidth: float = 4e9
    link_speed: float = 40e9


@dataclass(frozen=True)
class VmSpec:
    name: str
    host: str
    vcpus: int = 1
    memory: float = 1024.0
    disk: float = 10 * 1024**3
    nic: str = "vnic"
    vf_rate: float = 0.0
    weight: int = 256
    cap: float = 0.0
    storage: str = ""
    dirty_rate: float = 5e6
    wss: float = 0.0


@dataclass(frozen=True)
class Phase:
    at: float
    params: dict[str, Any]


@dataclass(frozen=True)
class WorkloadSpec:
    kind: str
    vm: str
    params: dict[str, Any]
    phases: tuple[Phase, ...] = ()
    stagger: bool = True


@dataclass(frozen=True)
class ProfileSpec:
    name: str
    policies: tuple[str, ...] = ()
    mode: str = "auto"
    params: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class ControlSpec:
    monitor_period: float = 1.0
    history: int = 600
    max_migrations_per_host: int = 1
    max_migrations_cluster: int = 4
    hold_down: float = 300.0
    action_timeout: float = 600.0
    approval_timeout: float = 300.0
    cpu_headroom: float = 0.9


@dataclass(frozen=True)
class OutputSpec:
    per_vm: bool = False
    plots: bool = True
    sample_every: float = 0.0
    intensity: bool = False


@dataclass(frozen=True)
class TrialsSpec:
    """Virtue's method: each profile re-places the VMs from many Random placements, then the result runs."""

    count: int = 25
    slots: int = 4
    warmup: float = 10.0
    iterations: int = 1


@dataclass(frozen=True)
class Scenario:
    """A whole validated scenario."""

    name: str
    duration: float
    step: float = 1.0
    seed: int = 1
    description: str = ""
    topology: TopologySpec = field(default_factory=TopologySpec)
    hosts: tuple[HostSpec, ...] = ()
    storage: tuple[StorageSpec, ...] = ()
    vms: tuple[VmSpec, ...] = ()
    workloads: tuple[WorkloadSpec, ...] = ()
    profiles: dict[str, ProfileSpec] = field(default_factory=dict)
    control: ControlSpec = field(default_factory=ControlSpec)
    outputs: OutputSpec = field(default_factory=OutputSpec)
    simulator: dict[str, Any] = field(default_factory=dict)
    trials: TrialsSpec | None = None
    source: str = "<scenario>"
    base_dir: Path = field(default_factory=Path.cwd)

    def vm_index(self) -> dict[str, int]:
        return {v.name: i for i, v in enumerate(self.vms)}

    def host_index(self) -> dict[str, int]:
        return {h.name: i for i, h in enumerate(self.hosts)}


def simulator_defaults() -> dict[str, Any]:
    return {k: f.default for k, f in SIMULATOR_FIELDS.items()}


ProfileCheck = Callable[[Reader, "ProfileSpec"], object]


def load_scenario(path: str | Path, profile_check: ProfileCheck | None = None) -> Scenario:
    """Read and validate a scenario file without a [sweep]; raises InputError listing every problem.

    profile_check, given by a higher floor that knows the policies, checks each profile's policies
    and parameters into the same list of problems. Files with a [sweep] are read by sova.model.sweep.
    """
    from sova.model.sweep import load_runs

    sweep, runs = load_runs(path, profile_check)
    if sweep is not None:
        raise InputError([Problem(f"{path}: [sweep]", "this file describes a sweep; run it with `sova run`")])
    return runs[0]


def scenario_from_dict(
    raw: dict[str, Any],
    source: str = "<scenario>",
    base_dir: Path | None = None,
    profile_check: ProfileCheck | None = None,
) -> Scenario:
    """Validate a parsed scenario (e.g. from TOML) and build the Scenario; raises InputError."""
    r = Reader(source)
    known = {"scenario", "topology", "defaults", "hosts", "storage", "vms", "workloads", "profiles"}
    known |= {"control", "outputs", "simulator", "trials"}
    r.table({k: v for k, v in raw.items() if k not in known}, {}, "")
    head = r.table(raw.get("scenario", {}), SCENARIO_FIELDS, "[scenario]")
    topo = TopologySpec(**r.table(raw.get("topology", {}), TOPOLOGY_FIELDS, "[topology]"))
    defaults = raw.get("defaults", {})
    if not isinstance(defaults, dict):
        r.error("[defaults]", "expected a table with optional host and vm sub-tables")
        defaults = {}
    r.table(defaults, {"host": Field("table", {}), "vm": Field("table", {})}, "[defaults]")

    hosts = _read_hosts(r, raw.get("hosts", []), defaults.get("host", {}))
    storage = _read_storage(r, raw.get("storage", []))
    vms = _read_vms(r, raw.get("vms", []), defaults.get("vm", {}), hosts, storage, head["seed"] or 0)
    workloads = _read_workloads(r, raw.get("workloads", []), vms, base_dir or Path.cwd(), raw.get("storage", []))
    profiles = _read_profiles(r, raw.get("profiles", {}))
    if profile_check is not None:
        for prof in profiles.values():
            profile_check(r, prof)
    control = ControlSpec(**r.table(raw.get("control", {}), CONTROL_FIELDS, "[control]"))
    outputs = OutputSpec(**r.table(raw.get("outputs", {}), OUTPUT_FIELDS, "[outputs]"))
    simulator = r.table(raw.get("simulator", {}), SIMULATOR_FIELDS, "[simulator]")
    trials = TrialsSpec(**r.table(raw["trials"], TRIALS_FIELDS, "[trials]")) if "trials" in raw else None
    if trials is not None and head.get("duration") is not None and trials.warmup >= head["duration"]:
        r.error("[trials].warmup", f"{trials.warmup:g} s leaves nothing of the {head['duration']:g} s run to measure")
    _check_topology_fits(r, topo, len(hosts))

    if head.get("duration") is not None and head.get("step") is not None and head["step"] > head["duration"]:
        r.error("[scenario].step", f"step {head['step']:g} s is longer than the duration {head['duration']:g} s")
    if r.problems:
        raise InputError(r.problems)
    return Scenario(
        name=head["name"],
        description=head["description"],
        duration=head["duration"],
        step=head["step"],
        seed=head["seed"],
        topology=topo,
        hosts=tuple(hosts),
        storage=tuple(storage),
        vms=tuple(vms),
        workloads=tuple(workloads),
        profiles=profiles,
        control=control,
        outputs=outputs,
        simulator=simulator,
        trials=trials,
        source=source,
        base_dir=base_dir or Path.cwd(),
    )


def _as_list(r: Reader, raw: Any, where: str) -> list[Any]:
    if isinstance(raw, list):
        return raw
    r.error(where, f"expected an array of tables ([[{where.strip('[]')}]]), got {type(raw).__name__}")
    return []


def _expand_names(r: Reader, name: str | None, count: int | None, where: str, start: int | None = 1) -> list[str]:
    if name is None:
        return []
    count, start = 1 if count is None else count, 1 if start is None else start
    if count == 0:
        return []
    if count == 1 and "{i}" not in name:
        return [name]
    if "{i}" not in name:
        r.error(f"{where}.name", f"with count = {count}, the name must be a pattern containing {{i}}")
        return []
    return [name.replace("{i}", str(i)) for i in range(start, start + count)]


def _unique(r: Reader, names: list[str], where: str, what: str) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            r.error(where, f"{what} name {n!r} is used twice")
        seen.add(n)


def _counted_entries(r: Reader, raw: Any, defaults: Any, fields: dict[str, Field], table: str):
    """Each [[table]] entry, merged over [defaults.<kind>] and checked: (where, values, names it makes)."""
    kind = table.strip("[]").rstrip("s")
    base = r.table(
        defaults,
        {k: Field(f.kind, None) for k, f in fields.items() if k not in ("name", "start")},
        f"[defaults.{kind}]",
    )
    base = {k: v for k, v in base.items() if v is not None}
    for n, entry in enumerate(_as_list(r, raw, table), start=1):
        where = f"{table} #{n}"
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            where += f" ({entry['name']})"
        t = r.table({**base, **entry} if isinstance(entry, dict) else entry, fields, where)
        yield where, t, _expand_names(r, t["name"], t["count"], where, t["start"])


def _spec_fields(t: dict[str, Any], *skip: str) -> dict[str, Any]:
    return {k: v for k, v in t.items() if k not in ("name", "count", "start", *skip) and v is not None}


def _read_hosts(r: Reader, raw: Any, defaults: Any) -> list[HostSpec]:
    out: list[HostSpec] = []
    for where, t, names in _counted_entries(r, raw, defaults, HOST_FIELDS, "[[hosts]]"):
        nic = NicSpec(**r.table(t["nic"], NIC_FIELDS, f"{where}.nic"))
        out += [HostSpec(name=name, nic=nic, **_spec_fields(t, "nic")) for name in names]
        if t["power_idle"] is not None and t["power_max"] is not None and t["power_max"] < t["power_idle"]:
            r.error(f"{where}.power_max", "must be at least power_idle")
    if not out:
        r.error("[[hosts]]", "a scenario needs at least one host")
    _unique(r, [h.name for h in out], "[[hosts]]", "host")
    return out


_STORAGE_MODELS = {"ssd": (8, 100e-6, 4e9), "disk-array": (8, 8e-3, 1.2e9)}


def _read_storage(r: Reader, raw: Any) -> list[StorageSpec]:
    out = []
    for n, entry in enumerate(_as_list(r, raw, "[[storage]]"), start=1):
        t = r.table(entry, STORAGE_FIELDS, f"[[storage]] #{n}")
        if t["name"] is None:
            continue
        par, acc, bw = _STORAGE_MODELS[t["device"] or "ssd"]
        out.append(
            StorageSpec(
                name=t["name"],
                device=t["device"],
                parallelism=t["parallelism"] or par,
                access_time=t["access_time"] or acc,
                bandwidth=t["bandwidth"] or bw * (par if t["device"] == "disk-array" else 1),
                link_speed=t["link_speed"],
            )
        )
    _unique(r, [s.name for s in out], "[[storage]]", "storage server")
    return out


def _read_vms(
    r: Reader, raw: Any, defaults: Any, hosts: list[HostSpec], storage: list[StorageSpec], seed: int
) -> list[VmSpec]:
    host_names = {h.name for h in hosts}
    storage_names = {s.name for s in storage}
    out: list[VmSpec] = []
    for where, t, names in _counted_entries(r, raw, defaults, VM_FIELDS, "[[vms]]"):
        if t["host"] not in (None, *AUTO_HOSTS) and t["host"] not in host_names:
            r.error(
                f"{where}.host", f"unknown host {t['host']!r}; expected 'auto', 'random' or one of {_few(host_names)}"
            )
        if t["storage"] and t["storage"] not in storage_names:
            r.error(f"{where}.storage", f"unknown storage server {t['storage']!r}; expected {_few(storage_names)}")
        if t["nic"] == "vf" and t["host"] in host_names:
            host = next(h for h in hosts if h.name == t["host"])
            if not host.nic.sriov or host.nic.max_vfs == 0:
                r.error(f"{where}.nic", f"host {host.name!r} has no SR-IOV VFs; expected 'vnic'")
        out += [VmSpec(name=name, **_spec_fields(t)) for name in names]
    _unique(r, [v.name for v in out], "[[vms]]", "VM")
    if r.problems:
        return out
    return _place_auto(r, out, hosts, np.random.default_rng(seed))


def _place_auto(r: Reader, vms: list[VmSpec], hosts: list[HostSpec], rng: np.random.Generator) -> list[VmSpec]:
    """Resolve host = 'auto' (round-robin) and 'random' (uniform, seeded) over hosts with memory for the VM."""
    free = {h.name: h.memory - h.dom0_memory for h in hosts}
    for v in vms:
        if v.host not in AUTO_HOSTS:
            free[v.host] -= v.memory
    out, cursor = [], 0
    for v in vms:
        if v.host in AUTO_HOSTS:
            room = [k for k, h in enumerate(hosts) if free[h.name] >= v.memory]
            if not room:
                r.error(f"[[vms]] ({v.name}).host", f"{v.host!r} found no host with enough free memory")
            else:
                if v.host == "random":
                    k = int(rng.choice(room))
                else:
                    k = min(room, key=lambda i: (i - cursor) % len(hosts))
                    cursor = (k + 1) % len(hosts)
                free[hosts[k].name] -= v.memory
                v = VmSpec(**{**v.__dict__, "host": hosts[k].name})
        out.append(v)
    for name, left in free.items():
        if left < 0:
            r.error("[[vms]]", f"VMs placed on host {name!r} need {-left:.0f} MiB more memory than it has")
    return out


def _read_workloads(r: Reader, raw: Any, vms: list[VmSpec], base_dir: Path, storage_raw: Any) -> list[WorkloadSpec]:
    names = [v.name for v in vms]
    name_set = set(names)
    out = []
    has_storage = isinstance(storage_raw, list) and len(storage_raw) > 0
    for n, entry in enumerate(_as_list(r, raw, "[[workloads]]"), start=1):
        where = f"[[workloads]] #{n}"
        if not isinstance(entry, dict):
            r.error(where, "expected a table")
            continue
        kind = entry.get("kind")
        params_spec = WORKLOAD_PARAMS.get(kind, {}) if isinstance(kind, str) else {}
        head = r.table(entry, WORKLOAD_FIELDS, where, extra_ok=(*params_spec, "phases"))
        if head["kind"] is None:
            continue
        if head["kind"] in ("fio", "bitbrains") and not has_storage:
            r.error(f"{where}.kind", f"{head['kind']} does disk IO; expected a [[storage]] server in the scenario")
        params = r.table({k: v for k, v in entry.items() if k in params_spec}, params_spec, where)
        vm = head["vm"]
        if vm is not None and not fnmatch.filter(names, vm):
            r.error(f"{where}.vm", f"matches no VM; expected a VM name or pattern ({_few(name_set)})")
        for key in ("peer", "client"):
            if key not in params or params[key] is None:
                continue
            for own in fnmatch.filter(names, vm or ""):
                other = peer_name(params[key], own)
                if other not in ("external", *name_set):
                    r.error(
                        f"{where}.{key}",
                        f"unknown VM {other!r} (for {own}); expected 'external', a VM name, "
                        "or a pattern with {i} standing for the workload VM's own number",
                    )
                    break
        if head["kind"] == "web":
            _check_tiers(r, where, params, fnmatch.filter(names, vm or ""), names)
        if params.get("file"):
            params["file"] = _resolve_trace(r, params["file"], base_dir, f"{where}.file")
        phases = []
        raw_phases = entry.get("phases", [])
        for m, ph in enumerate(_as_list(r, raw_phases, f"{where}.phases"), start=1):
            pwhere = f"{where}.phases #{m}"
            changeable = {k: f for k, f in params_spec.items() if k not in STRUCTURAL_PARAMS}
            fields = {"at": Field("duration", REQUIRED, "when the phase starts", lo=0)}
            fields |= {k: Field(f.kind, None, f.doc, f.choices, f.lo, f.hi, f.lo_open) for k, f in changeable.items()}
            t = r.table(ph, fields, pwhere)
            phases.append(Phase(at=t.pop("at") or 0.0, params={k: v for k, v in t.items() if v is not None}))
        ats = [p.at for p in phases]
        if ats != sorted(ats):
            r.error(f"{where}.phases", "phases must be in increasing order of 'at'")
        out.append(
            WorkloadSpec(kind=head["kind"], vm=vm or "", params=params, phases=tuple(phases), stagger=head["stagger"])
        )
    return out


def _check_tiers(r: Reader, where: str, params: dict, clients: list[str], names: list[str]) -> None:
    """A web workload's web and cache patterns must name VMs (for every client), and not the client."""
    web, cache = params.get("web"), params.get("cache")
    for own in clients if web is not None else []:
        webs = fnmatch.filter(names, peer_name(web, own))
        if not webs:
            r.error(f"{where}.web", f"matches no VM (for client {own}); expected a VM name, a glob or 'web{{i}}'")
            break
        if own in webs:
            r.error(f"{where}.web", f"includes the client {own} itself; expected the web tier's VMs")
            break
    if cache and not fnmatch.filter(names, cache):
        r.error(f"{where}.cache", "matches no VM; expected the cache tier's VMs (a name or glob) or ''")


def peer_name(pattern: str, own: str) -> str:
    """A peer/client name for the workload VM `own`: {i} stands for own's trailing number (web7 -> cli7)."""
    if "{i}" not in pattern:
        return pattern
    digits = len(own) - len(own.rstrip("0123456789"))
    return pattern.replace("{i}", own[len(own) - digits :] if digits else "")


def _resolve_trace(r: Reader, value: str, base_dir: Path, where: str) -> str:
    archive, _, member = value.partition(".tar.gz:")
    path_text = archive + ".tar.gz" if member else value
    path = Path(path_text)
    if not path.is_absolute():
        path = (base_dir / path).resolve()
    if not path.exists():
        r.error(where, f"trace file {str(path)!r} does not exist")
    return f"{path}:{member}" if member else str(path)


def _read_profiles(r: Reader, raw: Any) -> dict[str, ProfileSpec]:
    if not isinstance(raw, dict):
        r.error("[profiles]", "expected a table of profiles: [profiles.NAME]")
        return {}
    out = {}
    for name, entry in raw.items():
        t = r.table(entry, PROFILE_FIELDS, f"[profiles.{name}]")
        params = t["params"] or {}
        for pol, p in params.items():
            if not isinstance(p, dict):
                r.error(f"[profiles.{name}.params.{pol}]", "expected a table of parameters")
        out[name] = ProfileSpec(
            name=name,
            policies=tuple(t["policies"] or ()),
            mode=t["mode"] or "auto",
            params={k: v for k, v in params.items() if isinstance(v, dict)},
        )
    if not out:
        out["default"] = ProfileSpec(name="default")
    return out


def _check_topology_fits(r: Reader, t: TopologySpec, n_hosts: int) -> None:
    slots = {
        "single-switch": n_hosts,
        "leaf-spine": t.leaves * t.hosts_per_leaf,
        "fat-tree": t.k * (t.k // 2) * (t.hosts_per_edge or t.k // 2),
        "three-tier": t.racks * t.hosts_per_rack,
    }.get(t.kind, n_hosts)
    if n_hosts > slots:
        r.error("[topology]", f"a {t.kind} with these sizes has {slots} host ports but there are {n_hosts} hosts")
    if t.kind == "fat-tree" and t.k % 2:
        r.error("[topology].k", f"fat-tree radix k must be even, got {t.k}")


def _few(names: set[str] | list[str], n: int = 8) -> str:
    items = sorted(names)
    return ", ".join(items[:n]) + (", ..." if len(items) > n else "") if items else "(none defined)"
