"""The one protocol every workload kind follows, and the data a step hands it.

A kind sees its instances as a ``Group`` (one row per (workload entry, VM), parameters as arrays) and
takes part in a step in four places, in the simulator's fixed order:

1. ``register`` (once, at set-up): create the flows it sends on and whatever state it keeps;
2. ``demand``: state what each instance asks for in the step, CPU per VM and bits/s per flow;
3. ``io``: the storage IO streams it offers (kinds that do IO);
4. ``advance``: move its work on with what the physics gave (CPU, network rates) and report what
   finished.

A kind states demand only; what it gets is decided by the simulator. ``sim`` is the Simulator
(sim/engine.py): a kind reads its hosts' and VMs' facts there and adds flows through ``sim.network.add_flow``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from sova.model.plugins import import_modules


@dataclass
class Group:
    """Instances of one workload kind: one row per (workload, VM)."""

    kind: str
    vm: np.ndarray
    params: dict[str, np.ndarray]
    phase: np.ndarray
    spec_index: np.ndarray
    flows: dict[str, np.ndarray] = field(default_factory=dict)
    state: dict[str, np.ndarray] = field(default_factory=dict)
    series: dict[str, np.ndarray] = field(default_factory=dict)
    cumulative: dict[str, np.ndarray] = field(default_factory=dict)  # running sums of series, for coarse steps
    model: Any = None  # a kind's own structure where arrays per row do not say enough (web streams, jobs)

    def __len__(self) -> int:
        return len(self.vm)


@dataclass
class Demand:
    """What the workloads ask of one step [t, t + dt); kinds add to ``cpu`` and set ``flow``."""

    t: float
    dt: float
    run: np.ndarray  # per VM: the part of the step it runs (not paused by a migration)
    ends_run: np.ndarray  # per flow: the part of the step both its ends run
    cpu: np.ndarray  # per VM: cores wanted
    flow: np.ndarray  # per flow: bits/s wanted
    flow_scale: np.ndarray  # per flow: the part of the step it is on (a duty cycle's on-time)


@dataclass(frozen=True)
class Granted:
    """What the physics gave in one step, for kinds to advance their work with."""

    dt: float
    rate: np.ndarray  # per flow: bits/s carried (a kind may cut its own flows' rate at their last byte)
    load: np.ndarray  # per resource of the layout: load in its units
    cap: np.ndarray  # per resource: capacity
    vm_alloc: np.ndarray  # per VM: cores got
    vm_want: np.ndarray  # per VM: cores wanted before its vCPU count and cap bound them
    stretch: np.ndarray  # per host: slowdown of work (run-queue overhead, hyper-thread siblings)
    run: np.ndarray  # per VM: the part of the step it ran
    wake_wait: np.ndarray  # per VM: s a request that wakes it waits for a hardware thread
    dom0_wait: np.ndarray  # per host: s a packet waits for Dom0's forwarding thread to get a hardware thread


@dataclass(frozen=True)
class IOStreams:
    """Storage IO offered in a step: one stream per row, against its VM's storage server."""

    vm: np.ndarray
    iops: np.ndarray
    size: np.ndarray  # bytes per IO
    read: np.ndarray  # fraction of reads
    depth: np.ndarray  # IOs kept outstanding (fio's iodepth); 0: open loop
    sequential: np.ndarray | None = None  # per stream: sequential IO (no seek); None: all random


class WorkloadKind:
    """One kind of workload; subclasses override the parts of the step they take part in."""

    name: ClassVar[str] = ""
    order: ClassVar[int] = 0  # place in the step: kinds that read others' demand (web) come last
    does_io: ClassVar[bool] = False  # offers storage IO: the simulator gives its VMs IO flows

    def split_entry(self, spec: Any, vms: list[str]) -> list[dict] | None:
        """Per-VM parameters of one scenario entry over the VMs it names, `vms` (a trace set gives each its own
        file); None: every VM takes the entry's parameters."""
        return None

    def prepare(self, group: Group, specs: tuple, step: float) -> None:
        """Read what the instances need before the simulator exists (traces, initial state)."""

    def register(self, group: Group, sim: Any) -> None:
        """Create the kind's flows (``sim.network.add_flow``) and state; called once at set-up."""

    def demand(self, group: Group, sim: Any, step: Demand) -> None:
        """Add the step's CPU demand per VM and set its flows' demand."""

    def io(self, group: Group, sim: Any, t: float, dt: float) -> IOStreams | None:
        """The storage IO the instances offer in the step, if the kind does IO."""
        return None

    def io_vms(self, group: Group) -> np.ndarray:
        """The VMs that may do storage IO (the simulator gives each a read and a write flow)."""
        return group.vm if self.does_io else group.vm[:0]

    def advance(self, group: Group, sim: Any, step: Granted) -> None:
        """Move work on with what the step gave; report what finished through ``sim.events``."""


_KINDS: dict[str, WorkloadKind] = {}


def register_kind(cls: type[WorkloadKind]) -> type[WorkloadKind]:
    """Class decorator: make a kind known by its name."""
    if not cls.name:
        raise ValueError(f"workload kind {cls.__name__} has no name")
    _KINDS[cls.name] = cls()
    return cls


def kinds() -> dict[str, WorkloadKind]:
    """Every kind by name, in step order; each module of this package is imported on first use."""
    import_modules("sova.sim.workload_kinds")
    return dict(sorted(_KINDS.items(), key=lambda item: (item[1].order, item[0])))


def on_fraction(t: float, dt: float, period: np.ndarray, duty: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """Fraction of [t, t+dt) during which an on/off cycle (on for duty*period each period) is on."""

    def cum(y: np.ndarray) -> np.ndarray:
        k = np.floor(y / period)
        return k * duty * period + np.minimum(y - k * period, duty * period)

    return (cum(t + dt + phase) - cum(t + phase)) / dt
