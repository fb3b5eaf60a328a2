"""Parsing of quantities with units, as written in scenario files.

Internal units are fixed everywhere in Sova: bandwidth in bit/s, sizes in bytes, memory in MiB,
time in seconds, CPU in cores. A scenario may write a bare number (taken in the internal unit) or a
string with a unit ("10Gbps", "4GiB", "128KB", "10min").
"""

from __future__ import annotations

import re

_NUM = r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"

_BANDWIDTH = {
    "bps": 1.0,
    "kbps": 1e3,
    "mbps": 1e6,
    "gbps": 1e9,
    "tbps": 1e12,
    "b/s": 1.0,
    "kb/s": 1e3,
    "mb/s": 1e6,
    "gb/s": 1e9,
}
_SIZE = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
_DURATION = {
    "ns": 1e-9,
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "min": 60.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}


class UnitError(ValueError):
    """A quantity could not be read; the message says what was expected."""


def _parse(value: object, table: dict[str, float], what: str, examples: str, default_unit: float) -> float:
    if isinstance(value, bool):
        raise UnitError(f"expected {what} (a number or a string like {examples}), got a boolean")
    if isinstance(value, int | float):
        return float(value) * default_unit
    if isinstance(value, str):
        m = re.fullmatch(_NUM + r"\s*([A-Za-z/]*)", value.strip())
        if m:
            unit = m.group(2).lower()
            if unit == "":
                return float(m.group(1)) * default_unit
            if unit in table:
                return float(m.group(1)) * table[unit]
        raise UnitError(f"expected {what} like {examples}, got {value!r}")
    raise UnitError(f"expected {what} (a number or a string like {examples}), got {type(value).__name__}")


def bandwidth(value: object) -> float:
    """Bandwidth in bit/s; bare numbers are bit/s."""
    return _parse(value, _BANDWIDTH, "a bandwidth", "'10Gbps' or '100Mbps'", 1.0)


def size_bytes(value: object) -> float:
    """A size in bytes; bare numbers are bytes."""
    return _parse(value, _SIZE, "a size", "'128KB' or '4GiB'", 1.0)


def memory_mib(value: object) -> float:
    """A memory size in MiB; bare numbers are MiB."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return _parse(value, _SIZE, "a memory size", "'4GiB' or '512MiB'", 1024**2) / 1024**2


def duration(value: object) -> float:
    """A duration in seconds; bare numbers are seconds."""
    return _parse(value, _DURATION, "a duration", "'30s', '10min' or '2h'", 1.0)


_SHOWN = {  # (scale in the internal unit, name), largest first
    "bandwidth": ((1e12, "Tb/s"), (1e9, "Gb/s"), (1e6, "Mb/s"), (1e3, "kb/s"), (1.0, "bit/s")),
    "memory": ((1024.0**2, "TiB"), (1024.0, "GiB"), (1.0, "MiB")),
    "size": (
        (1024.0**5, "PiB"),
        (1024.0**4, "TiB"),
        (1024.0**3, "GiB"),
        (1024.0**2, "MiB"),
        (1024.0, "KiB"),
        (1.0, "B"),
    ),
    "duration": ((86400.0, "days"), (3600.0, "h"), (60.0, "min"), (1.0, "s"), (1e-3, "ms"), (1e-6, "us")),
}


def shown(value: float, kind: str) -> str:
    """A quantity in the internal unit of `kind`, as a person reads it: shown(3.2e12, "bandwidth") is
    "3.2 Tb/s"; a kind without units is the number itself."""
    scales = _SHOWN.get(kind)
    if scales is None:
        return f"{value:g}"
    scale, name = next(((s, n) for s, n in scales if abs(value) >= s), scales[-1])
    return f"{value / scale:.3g} {name}"
