"""Scenario files: the plain dataclasses a run is built from, and how a file becomes one.

``load_scenario(path)`` reads and validates a whole file and raises ``InputError`` with every
problem found (file, table, key, what was expected). The keys are described in
``sova.model.scenario_fields`` and read by ``sova.model.scenario_reader``. Policy names and their
parameters are checked one floor up (``sova.control.profiles``), because the policy registry lives there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sova.model.placement_rules import RuleBook
from sova.model.scenario_events import ScenarioEvent
from sova.model.scenario_fields import SIMULATOR_FIELDS
from sova.model.schema import Problem, Reader
from sova.model.storage_slo import StorageSlo


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
    threads_per_core: int = 1
    hypervisor: str = "kvm"
    ghz: float = 2.6
    mips: float = 0.0  # per core; 0: ghz * 1,000
    memory: float = 65536.0
    dom0_vcpus: int = 2
    dom0_weight: int = 256
    dom0_memory: float = 4096.0
    power_idle: float = 100.0
    power_max: float = 250.0
    power_model: str = "linear"
    power_curve: tuple[float, ...] = ()  # watts at 0, 10, ..., 100 % CPU (power_model = custom)
    sleep_power: float = 8.0  # W asleep (S3)
    sleep_wake_time: float = 5.0  # s
    off_power: float = 5.0  # W switched off (S5)
    off_wake_time: float = 180.0  # s to boot
    wake_power: float = 0.0  # W while waking; 0: full-load power
    nic: NicSpec = field(default_factory=NicSpec)

    @property
    def core_mips(self) -> float:
        """MIPS of one core at full speed: `mips`, or 1,000 per GHz where it gives none."""
        return self.mips or self.ghz * 1000


@dataclass(frozen=True)
class StorageSpec:
    name: str
    device: str = "ssd"
    parallelism: int = 8
    access_time: float = 100e-6
    sequential_access_time: float = 20e-6
    bandwidth: float = 4e9
    link_speed: float = 40e9
    write_access_time: float = 100e-6
    write_bandwidth: float = 4e9
    service_cv: float = 1.0  # coefficient of variation of one request's service time
    variability: float = 0.0  # coefficient of variation of the device's speed over time
    variability_time: float = 1.0  # s, the correlation time of that variation
    stripe: float = 0.0  # bytes of a RAID 0 stripe unit (chunk) on one disk; 0: requests are not striped


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
    mips: float = 0.0  # per vCPU; 0: a vCPU at 100 % uses a whole host core
    arrive: float = 0.0  # s; a VM that arrives later with no host ("") is placed by the admission policy
    depart: float = 0.0  # s; 0: it stays
    from_trace: bool = False  # vCPUs and memory (azure, opendc: also arrive and depart) from its trace
    reserve: str = "memory"  # what it must find free where it is placed at creation: memory, or memory-and-cpu

    @property
    def comes_later(self) -> bool:
        """Not there at the start for sure: it arrives at a time the scenario or its trace gives."""
        return self.arrive > 0 or self.from_trace


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
    where: str = ""  # the entry in its file, for errors found later (e.g. in a trace it names)
    memory_used: float = 0.0  # MiB the workload keeps in use in its guest (0: not stated)


@dataclass(frozen=True)
class ProfileSpec:
    name: str
    policies: tuple[str, ...] = ()
    mode: str = "auto"
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    admission: str = "first-fit"  # the admission policy: places VMs that arrive without a host
    simulator: dict[str, Any] = field(default_factory=dict)  # [simulator] keys it runs with instead


@dataclass(frozen=True)
class ControlSpec:
    monitor_period: float = 1.0
    history: float = 600.0  # s of snapshots the Knowledge keeps
    max_migrations_per_host: int = 1
    max_migrations_cluster: int = 4
    hold_down: float = 300.0
    action_timeout: float = 600.0
    approval_timeout: float = 300.0
    cpu_headroom: float = 0.9
    failure_grace: float = 30.0  # s without a report before a host is declared failed (its VMs restarted)


@dataclass(frozen=True)
class OutputSpec:
    csv: bool = False  # metrics-PROFILE.csv (and trials.csv) beside the Parquet tables, on request
    per_vm: bool = False
    plots: bool = True
    sample_every: float = 0.0
    intensity: bool = False
    interference: float = 0.0
    groups: dict[str, str] = field(default_factory=dict)  # label: VM name pattern
    measure_from: float = 0.0  # s: the summary's energy and SLA metrics count from here ...
    measure_to: float = 0.0  # ... to here (0: the end)


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
    slos: tuple[tuple[str, StorageSlo], ...] = ()  # (VM, its storage SLO), from [[slos]]
    rules: RuleBook = field(default_factory=RuleBook)  # placement rules, from [[rules]]
    events: tuple[ScenarioEvent, ...] = ()  # operators' actions and faults in time order, from [[events]]
    params: dict[str, Any] = field(default_factory=dict)  # the [params] values it was made with
    warnings: tuple[Problem, ...] = ()  # values taken that are most likely not meant (shown before a run)
    source: str = "<scenario>"
    base_dir: Path = field(default_factory=Path.cwd)

    @property
    def tick(self) -> float:
        """The finest clock: the simulator (and the loop) advance by it; the fabric steps every `step`."""
        storage_step = self.simulator.get("storage_step") or 0.0
        return storage_step if 0 < storage_step < self.step else self.step

    def for_profile(self, name: str) -> Scenario:
        """The scenario as profile `name` runs it: its [simulator] keys over the scenario's."""
        own = self.profiles[name].simulator
        return replace(self, simulator={**self.simulator, **own}) if own else self

    def vm_index(self) -> dict[str, int]:
        return {v.name: i for i, v in enumerate(self.vms)}

    def host_index(self) -> dict[str, int]:
        return {h.name: i for i, h in enumerate(self.hosts)}


def simulator_defaults() -> dict[str, Any]:
    return {k: f.default for k, f in SIMULATOR_FIELDS.items()}


ProfileCheck = Callable[[Reader, "ProfileSpec"], object]


def peer_name(pattern: str, own: str) -> str:
    """A peer/client name for the workload VM `own`: {i} stands for own's trailing number (web7 -> cli7)."""
    if "{i}" not in pattern:
        return pattern
    digits = len(own) - len(own.rstrip("0123456789"))
    return pattern.replace("{i}", own[len(own) - digits :] if digits else "")
