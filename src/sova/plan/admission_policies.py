"""Admission: the host a VM that asks to run is created on (Nova's scheduler, CloudSim's VM allocation).

An admission policy sees a fresh snapshot, the waiting requests, oldest first, and the Knowledge (for
what it needs over time), and returns a ``CreateVM`` for each request it can place now; a request it
cannot place waits for the next tick. A policy says only how it chooses among the hosts with room for a
request (``chooser``); the room each placement takes is counted before the next request of the batch.
Policies are registered by name and chosen per profile (``admission = "first-fit"``); adding one means
adding a module in ``sova.plan`` with a ``@register_admission`` subclass.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from sova.model.actions import CreateVM, SetHostPower
from sova.model.knowledge import Knowledge
from sova.model.snapshot import Snapshot, VmRequest

_ADMISSION: dict[str, type[AdmissionPolicy]] = {}
CPU_RATIO = 4.0  # vCPUs per host core a host may hold: Nova's initial_cpu_allocation_ratio default

# given a request and the hosts with room for it, the chosen host and why (None: none suits it now)
Chooser = Callable[[VmRequest, np.ndarray], tuple[int, str] | None]


class AdmissionPolicy(ABC):
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    def admit(
        self, snapshot: Snapshot, requests: list[VmRequest], knowledge: Knowledge
    ) -> list[CreateVM | SetHostPower]:
        """A creation for each request placed now, each with its reason; where no host that is on has room,
        a host asleep or off is woken for the request (one already waking is waited for), as DPM powers
        hosts on for demand: the request is placed once the host is on. Only hosts the request's must
        placement rules allow are considered, and those that keep its should rules too where any has room."""
        room = HostRoom(snapshot, CPU_RATIO)
        choose = self.chooser(snapshot, knowledge)
        bound = knowledge.rules.bind(snapshot.vms, snapshot.hosts) if knowledge.rules else None
        placed: dict[str, int] = {}  # this batch's VMs, for the rules of the next ones
        out = []
        full: set[tuple] = set()  # request sizes no host has room for: room only shrinks within a batch
        for request in requests:
            size = (request.memory, request.vcpus, request.vf)
            ruled = bound is not None and bool(bound.rules_of(request.name))
            if size in full and not ruled:
                continue
            fits, allowed = room.fits(request), None
            if ruled:
                allowed = bound.allowed(request.name, snapshot.vm_host, extra=placed)  # also for a host to wake
                fits = bound.preferred(request.name, snapshot.vm_host, fits, extra=placed)
            if not fits.any():
                wake = room.host_to_wake(request, allowed)
                if wake is None:
                    if not ruled:
                        full.add(size)
                    continue
                host, asleep = wake
                room.take(host, request)
                placed[request.name] = host
                if asleep:
                    room.waking[host] = True
                    reason = f"no host that is on has room for {request.name}; woken for it"
                    out.append(SetHostPower(snapshot.hosts[host], "on", policy=self.name, reason=reason))
                continue
            choice = choose(request, fits)
            if choice is None:
                continue
            host, reason = choice
            room.take(host, request)
            placed[request.name] = host
            out.append(CreateVM(request.name, snapshot.hosts[host], policy=self.name, reason=reason))
        return out

    @abstractmethod
    def chooser(self, snapshot: Snapshot, knowledge: Knowledge) -> Chooser:
        """How this policy picks a host for each request of one batch, in turn (it may keep what it placed)."""


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
        self.on = snapshot.hosts_on()  # a host asleep or off takes no VM until it is woken
        power = np.array(snapshot.host_power or ("on",) * hosts)
        self.waking = power == "waking"
        # where to look for a host to wake, and whether it must be woken: sleep wakes in seconds, off boots
        self._wake_order = ((self.waking, False), (power == "sleep", True), (power == "off", True))

    def fits(self, request: VmRequest) -> np.ndarray:
        """Per host: it is on and has the memory, vCPUs and (if asked) a free VF for the request."""
        return self.on & self._room(request)

    def host_to_wake(self, request: VmRequest, allowed: np.ndarray | None = None) -> tuple[int, bool] | None:
        """The first host with room for the request (among the `allowed`) that is waking (False: wait for
        it) or, failing that, asleep, then off (True: wake it); None if no host has room."""
        room = self._room(request) if allowed is None else self._room(request) & allowed
        for hosts, asleep in self._wake_order:
            found = np.flatnonzero(hosts & room)
            if len(found):
                return int(found[0]), asleep
        return None

    def _room(self, request: VmRequest) -> np.ndarray:
        room = (self.memory >= request.memory) & (self.vcpus >= request.vcpus)
        return room & (self.vfs >= 1) if request.vf else room

    def take(self, host: int, request: VmRequest) -> None:
        self.memory[host] -= request.memory
        self.vcpus[host] -= request.vcpus
        if request.vf:
            self.vfs[host] -= 1
