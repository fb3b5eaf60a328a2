"""Typed actions a plan is made of, and the outcome of applying one.

Actions are plain data with the reason they were chosen, so they can be logged, shown, approved and
replayed. A driver applies them; the executor decides whether they may be applied at all.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class Action:
    """Base of all actions: the VM or host it targets and why it was chosen."""

    reason: str = field(default="", kw_only=True)
    policy: str = field(default="", kw_only=True)

    @property
    def kind(self) -> str:
        return _KIND_NAMES[type(self)]

    @property
    def target(self) -> str:
        return getattr(self, "vm", "") or getattr(self, "host", "")

    def describe(self) -> str:
        args = ((k, getattr(self, k)) for k in _described_fields(type(self)))
        text = " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in args)
        return f"{self.kind} {text}"


@dataclass(frozen=True)
class Migrate(Action):
    vm: str
    dst: str


@dataclass(frozen=True)
class AttachVF(Action):
    vm: str
    rate: float = 0.0  # bit/s cap of the VF's rate tier (0: uncapped)


@dataclass(frozen=True)
class DetachVF(Action):
    vm: str


@dataclass(frozen=True)
class SetVFRate(Action):
    vm: str
    rate: float


@dataclass(frozen=True)
class SetCpu(Action):
    vm: str
    weight: int = 0  # 0: unchanged
    cap: float = -1.0  # cores; 0 removes the cap; -1: unchanged


@dataclass(frozen=True)
class SetIoLimit(Action):
    vm: str
    iops: float  # 0 removes the limit


@dataclass(frozen=True)
class SetIoSize(Action):
    vm: str
    size: float  # bytes: the request-merge limit (IOs above it are split); 0 removes it


@dataclass(frozen=True)
class SetIoTarget(Action):
    """The throughput target (and IO size limit) an IO controller holds a VM to, as its optimizer set it."""

    vm: str
    iops: float
    size: float = 0.0  # bytes; 0: no IO size limit


@dataclass(frozen=True)
class SetNetLimit(Action):
    vm: str
    rate: float  # bit/s on the vNIC; 0 removes the limit


@dataclass(frozen=True)
class SetDom0Weight(Action):
    host: str
    weight: int


@dataclass(frozen=True)
class SetHostPower(Action):
    """Put an empty host to sleep (ACPI S3) or switch it off (S5), or wake it ("on")."""

    host: str
    state: str  # on | sleep | off


@dataclass(frozen=True)
class CreateVM(Action):
    """Start a requested VM on a host (admission)."""

    vm: str
    host: str


@dataclass(frozen=True)
class RestartVM(Action):
    """Boot a VM of a failed host on another host, from its disks on shared storage (HA restart)."""

    vm: str
    host: str


_KIND_NAMES = {
    Migrate: "migrate",
    AttachVF: "attach-vf",
    DetachVF: "detach-vf",
    SetVFRate: "set-vf-rate",
    SetCpu: "set-cpu",
    SetIoLimit: "set-io-limit",
    SetIoSize: "set-io-size",
    SetIoTarget: "set-io-target",
    SetNetLimit: "set-net-limit",
    SetDom0Weight: "set-dom0-weight",
    SetHostPower: "set-host-power",
    CreateVM: "create-vm",
    RestartVM: "restart-vm",
}

ACTION_KINDS: dict[str, type[Action]] = {name: cls for cls, name in _KIND_NAMES.items()}  # kind -> class

# Outcome statuses
OK, RUNNING, FAILED, REJECTED, TIMEOUT, CANCELLED, PENDING, DRY_RUN, EXPIRED = (
    "ok",
    "running",
    "failed",
    "rejected",
    "timeout",
    "cancelled",
    "pending-approval",
    "dry-run",
    "expired",
)


@dataclass(frozen=True)
class Outcome:
    """What came of an action: a status from the list above and a message saying why."""

    status: str
    message: str = ""
    started: float = 0.0
    finished: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


@functools.cache
def _described_fields(cls: type) -> tuple[str, ...]:
    """The fields an action's one-line description shows (all but its reason and policy), per class."""
    return tuple(f.name for f in fields(cls) if f.name not in ("reason", "policy"))
