"""Admission: the host a VM that asks to run is created on (Nova's scheduler, CloudSim's VM allocation).

An admission policy sees a fresh snapshot, the waiting requests, oldest first, and the Knowledge (for
what it needs over time), and returns a ``CreateVM`` for each request it can place now; a request it cannot place waits for the next tick.
Policies are registered by name and chosen per profile (``admission = "first-fit"``); adding one means
adding a module in ``sova.plan`` with a ``@register_admission`` subclass.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from sova.model.actions import CreateVM
from sova.model.knowledge import Knowledge
from sova.model.snapshot import Snapshot, VmRequest

_ADMISSION: dict[str, type[AdmissionPolicy]] = {}


class AdmissionPolicy(ABC):
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    @abstractmethod
    def admit(self, snapshot: Snapshot, requests: list[VmRequest], knowledge: Knowledge) -> list[CreateVM]:
        """A creation for each request placed now, each with its reason."""


def register_admission(cls: type[AdmissionPolicy]) -> type[AdmissionPolicy]:
    if not cls.name:
        raise ValueError(f"admission policy class {cls.__name__} has no name")
    _ADMISSION[cls.name] = cls
    return cls


def admission_policies() -> dict[str, type[AdmissionPolicy]]:
    """Every registered admission policy; the modules of sova.plan are imported on first use."""
    from sova.plan.base import registry  # imports every module of sova.plan once

    registry()
    return dict(_ADMISSION)


class HostRoom:
    """What each host has left for new VMs, taken down as a batch of requests is placed."""

    def __init__(self, snapshot: Snapshot, cpu_ratio: float):
        hosts = len(snapshot.hosts)
        self.memory = snapshot.host_memory - np.bincount(snapshot.vm_host, weights=snapshot.vm_memory, minlength=hosts)
        self.vcpus = snapshot.host_cores * cpu_ratio - np.bincount(
            snapshot.vm_host, weights=snapshot.vm_vcpus, minlength=hosts
        )
        self.vfs = (snapshot.vfs_total - snapshot.vfs_used).astype(float)

    def fits(self, request: VmRequest) -> np.ndarray:
        """Per host: it has the memory, vCPUs and (if asked) a free VF for the request."""
        ok = (self.memory >= request.memory) & (self.vcpus >= request.vcpus)
        return ok & (self.vfs >= 1) if request.vf else ok

    def take(self, host: int, request: VmRequest) -> None:
        self.memory[host] -= request.memory
        self.vcpus[host] -= request.vcpus
        if request.vf:
            self.vfs[host] -= 1
