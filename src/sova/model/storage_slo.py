"""Tenants' storage SLOs, as SASLO's API sets them (the SASLO paper, Table 1): per VM the allowable range
of its throughput target (IOPS; the lower bound is the reservation, the upper the limit), of its IO size
limit (bytes), and the acceptable ranges of its SLO compliance rate and performance fluctuation ratio
(per cent). get_status returns the last SC rate and PF ratio the VM's SLO enforcement measured.

Every setter checks its values first (finite numbers, lower <= upper, rates >= 0, percentages within
0-100, a known VM) and raises SloError naming what was wrong; on an error nothing changes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace


class SloError(ValueError):
    """A tenant's SLO call that was refused; the message names the VM, the setting and what was expected."""


Range = tuple[float, float]


@dataclass(frozen=True)
class Ramp:
    """A tenant raising its throughput target in steps: from the range's lower bound by `step` IOPS every
    `every` seconds up to `top`, then held there or, with `repeat`, started again (the SASLO paper's
    settling-time experiment)."""

    step: float
    every: float
    top: float
    repeat: bool = False

    def target(self, low: float, t: float) -> float:
        levels = int((self.top - low) // self.step) + 1
        k = int(t // self.every)
        return low + self.step * (k % levels if self.repeat else min(k, levels - 1))


@dataclass(frozen=True)
class StorageSlo:
    """One VM's SLO targets and QoS constraints; None: not set (the VM is not under SLO control)."""

    throughput: Range | None = None  # IOPS
    io_size: Range | None = None  # bytes
    sc_rate: Range = (0.0, 100.0)  # per cent
    pf_ratio: Range = (0.0, 100.0)  # per cent
    ramp: Ramp | None = None  # the target follows this schedule instead of the optimizer
    latency: float | None = None  # seconds: the mean IO latency each second should stay within


@dataclass(frozen=True)
class SloStatus:
    sc_rate: float | None = None
    pf_ratio: float | None = None


_LIMITS = {  # setting: (unit, smallest allowed, largest allowed)
    "throughput": ("IOPS", 0.0, math.inf),
    "io_size": ("bytes", 512.0, math.inf),
    "sc_rate": ("%", 0.0, 100.0),
    "pf_ratio": ("%", 0.0, 100.0),
}


def checked_range(vm: str, setting: str, lower: float, upper: float) -> Range:
    """(lower, upper) as floats, or SloError saying what is wrong with them."""
    unit, smallest, largest = _LIMITS[setting]
    values = []
    for name, value in (("lower bound", lower), ("upper bound", upper)):
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise SloError(f"VM {vm!r}: {setting} {name} must be a number ({unit}), got {value!r}") from None
        if not math.isfinite(number):
            raise SloError(f"VM {vm!r}: {setting} {name} must be a finite number ({unit}), got {value!r}")
        if not smallest <= number <= largest:
            span = f">= {smallest:g}" if math.isinf(largest) else f"within {smallest:g}-{largest:g}"
            raise SloError(f"VM {vm!r}: {setting} {name} must be {span} {unit}, got {number:g}")
        values.append(number)
    if values[0] > values[1]:
        raise SloError(f"VM {vm!r}: {setting} lower bound {values[0]:g} is above the upper bound {values[1]:g}")
    if setting == "throughput" and values[1] <= 0:
        raise SloError(f"VM {vm!r}: throughput upper bound must be > 0 IOPS, got {values[1]:g}")
    return values[0], values[1]


def checked_latency(vm: str, target: float) -> float:
    """A latency target as a float of seconds, or SloError saying what is wrong with it."""
    try:
        seconds = float(target)
    except (TypeError, ValueError):
        raise SloError(f"VM {vm!r}: latency must be a number of seconds, got {target!r}") from None
    if not (math.isfinite(seconds) and seconds > 0):
        raise SloError(f"VM {vm!r}: latency must be a finite number of seconds above 0, got {target!r}")
    return seconds


class SloBook:
    """The SLOs of a set of VMs, with Table 1's five calls."""

    def __init__(self, vms: Iterable[str]):
        self._slos: dict[str, StorageSlo] = {vm: StorageSlo() for vm in vms}
        self._status: dict[str, SloStatus] = {vm: SloStatus() for vm in self._slos}

    def _known(self, vm: str) -> StorageSlo:
        if vm not in self._slos:
            raise SloError(f"unknown VM {vm!r}: SLOs can be set for {', '.join(sorted(self._slos)) or 'no VM'}")
        return self._slos[vm]

    def _set(self, vm: str, setting: str, lower: float, upper: float) -> None:
        slo = self._known(vm)
        self._slos[vm] = replace(slo, **{setting: checked_range(vm, setting, lower, upper)})

    def set_throughput(self, vm: str, lower: float, upper: float) -> None:
        self._set(vm, "throughput", lower, upper)

    def set_io_size(self, vm: str, lower: float, upper: float) -> None:
        self._set(vm, "io_size", lower, upper)

    def set_sc(self, vm: str, lower: float, upper: float) -> None:
        self._set(vm, "sc_rate", lower, upper)

    def set_pf(self, vm: str, lower: float, upper: float) -> None:
        self._set(vm, "pf_ratio", lower, upper)

    def set_latency(self, vm: str, target: float) -> None:
        """A latency SLO (seconds; beyond Table 1, for the paper's Fig. 8): the mean latency of each second
        should stay within it; Façade's control of the requests in flight holds it."""
        slo = self._known(vm)
        self._slos[vm] = replace(slo, latency=checked_latency(vm, target))

    def set_slo(self, vm: str, slo: StorageSlo) -> None:
        """A whole SLO at once, already checked (a scenario's [[slos]] entry)."""
        self._known(vm)
        self._slos[vm] = slo

    def get_status(self, vm: str) -> SloStatus:
        self._known(vm)
        return self._status[vm]

    def slo(self, vm: str) -> StorageSlo:
        return self._known(vm)

    def record_status(self, vm: str, sc_rate: float, pf_ratio: float) -> None:
        """What the VM's SLO enforcement measured over its last interval (the engine calls this)."""
        self._known(vm)
        finite = [float(x) if x is not None and math.isfinite(x) else None for x in (sc_rate, pf_ratio)]
        self._status[vm] = SloStatus(*finite)  # not measured (a guest shut off, a target of 0): None

    def under_control(self) -> list[str]:
        """The VMs with a throughput SLO, in the order they were given."""
        return [vm for vm, slo in self._slos.items() if slo.throughput is not None]


RANGES = ("throughput", "io_size", "sc_rate", "pf_ratio")  # Table 1's ranges, in its order


def updated_slo(vm: str, slo: StorageSlo, settings: dict) -> StorageSlo:
    """`slo` with the given settings ({"throughput": [low, high], ..., "latency": seconds}) changed, every
    one checked first: SloError on the first bad one, and then nothing is changed."""
    unknown = sorted(set(settings) - {*RANGES, "latency"})
    if unknown:
        raise SloError(f"unknown setting(s) {', '.join(unknown)}; expected {', '.join([*RANGES, 'latency'])}")
    changes: dict = {}
    for key in RANGES:
        if key in settings:
            bounds = settings[key]
            if not isinstance(bounds, list | tuple) or len(bounds) != 2:
                raise SloError(f"VM {vm!r}: {key} must be [lower, upper], got {bounds!r}")
            changes[key] = checked_range(vm, key, *bounds)
    if "latency" in settings:
        changes["latency"] = checked_latency(vm, settings["latency"])
    return replace(slo, **changes)


def slo_settings(slo: StorageSlo) -> dict:
    """An SLO as the tenant API shows it: its ranges as [low, high] lists (None: not set) and its latency
    target; a scenario's schedule (ramp) is no part of the API."""
    return {key: list(getattr(slo, key)) if getattr(slo, key) is not None else None for key in RANGES} | {
        "latency": slo.latency
    }


def slo_from_settings(vm: str, settings: dict) -> StorageSlo:
    """The SLO that slo_settings() showed, checked again (it came over the bus or from a database)."""
    return updated_slo(vm, StorageSlo(), {key: value for key, value in settings.items() if value is not None})
