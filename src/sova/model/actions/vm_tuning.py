"""A VM's share of its host: CPU weight and cap, disk IO limits and the IO controllers' targets, vNIC rate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sova.model.actions.base import Action


@dataclass(frozen=True)
class SetCpu(Action, kind="set-cpu"):
    vm: str
    weight: int = 0  # 0: unchanged
    cap: float = -1.0  # cores; 0 removes the cap; -1: unchanged


@dataclass(frozen=True)
class SetIoLimit(Action, kind="set-io-limit"):
    vm: str
    iops: float  # 0 removes the limit

    sets_io: ClassVar[bool] = True


@dataclass(frozen=True)
class SetIoSize(Action, kind="set-io-size"):
    vm: str
    size: float  # bytes: the request-merge limit (IOs above it are split); 0 removes it

    sets_io: ClassVar[bool] = True


@dataclass(frozen=True)
class SetIoTarget(Action, kind="set-io-target"):
    """The throughput target (and IO size limit) an IO controller holds a VM to, as its optimizer set it."""

    vm: str
    iops: float
    size: float = 0.0  # bytes; 0: no IO size limit


@dataclass(frozen=True)
class SetNetLimit(Action, kind="set-net-limit"):
    vm: str
    rate: float  # bit/s on the vNIC; 0 removes the limit
