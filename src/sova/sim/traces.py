"""Readers for the real workload traces in shared/traces/ (PlanetLab, Bitbrains GWA-T-12).

Each reader returns plain arrays and raises ``TraceError`` naming the file, the line and what was
expected when the file is not what it should be.
"""

from __future__ import annotations

import functools
import io
import math
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np


class TraceError(ValueError):
    """A trace file is missing or malformed; the message names the file and line."""


@functools.lru_cache(maxsize=4096)
def read_planetlab(path: str) -> np.ndarray:
    """CPU utilisation in [0, 1], one sample per line (integer percent, 5-minute samples)."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="ascii").split()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such trace file") from None
    except (UnicodeDecodeError, OSError) as exc:
        raise TraceError(f"{path}: cannot read as text ({exc})") from None
    values = []
    for n, tok in enumerate(lines, start=1):
        try:
            v = float(tok)
        except ValueError:
            raise TraceError(f"{path}: line {n}: expected a CPU percentage, got {tok!r}") from None
        if not 0 <= v <= 100:
            raise TraceError(f"{path}: line {n}: CPU percentage {v:g} is outside 0-100")
        values.append(v / 100.0)
    if not values:
        raise TraceError(f"{path}: empty trace; expected one CPU percentage per line")
    return np.asarray(values)


@dataclass(frozen=True)
class BitbrainsTrace:
    """Per-sample series of one Bitbrains VM; rates in bytes/s, memory in MiB, CPU in [0, 1]."""

    cores: int
    cpu: np.ndarray
    mem_used: np.ndarray
    disk_read: np.ndarray
    disk_write: np.ndarray
    net_rx: np.ndarray
    net_tx: np.ndarray


_BB_COLUMNS = 11


@functools.lru_cache(maxsize=1024)
def read_bitbrains(spec: str) -> BitbrainsTrace:
    """A GWA-T-12 CSV (';'-separated, header line) given as a path or 'ARCHIVE.tar.gz:MEMBER'."""
    archive, sep, member = spec.partition(".tar.gz:")
    try:
        if sep:
            with tarfile.open(archive + ".tar.gz", "r:gz") as tar:
                try:
                    f = tar.extractfile(member)
                except KeyError:
                    raise TraceError(f"{archive}.tar.gz: has no member {member!r}") from None
                if f is None:
                    raise TraceError(f"{archive}.tar.gz: member {member!r} is not a file")
                text = io.TextIOWrapper(f, encoding="utf-8").read()
        else:
            text = Path(spec).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceError(f"{spec}: no such trace file") from None
    except (OSError, UnicodeDecodeError, tarfile.TarError) as exc:
        raise TraceError(f"{spec}: cannot read ({exc})") from None
    rows = []
    for n, line in enumerate(text.splitlines(), start=1):
        if n == 1 and line.lower().startswith("timestamp"):
            continue
        if not line.strip():
            continue
        parts = [x.strip() for x in line.split(";")]
        if len(parts) < _BB_COLUMNS:
            raise TraceError(f"{spec}: line {n}: expected {_BB_COLUMNS} ';'-separated columns, got {len(parts)}")
        try:
            row = [float(x) for x in parts[:_BB_COLUMNS]]
        except ValueError:
            raise TraceError(f"{spec}: line {n}: expected numbers, got {line[:80]!r}") from None
        if not all(math.isfinite(x) and x >= 0 for x in row):
            raise TraceError(f"{spec}: line {n}: expected finite, non-negative numbers, got {line[:80]!r}")
        rows.append(row)
    if not rows:
        raise TraceError(f"{spec}: no samples")
    a = np.asarray(rows)
    kib = 1024.0
    return BitbrainsTrace(
        cores=max(1, int(a[0, 1])),
        cpu=np.clip(a[:, 4] / 100.0, 0.0, 1.0),
        mem_used=a[:, 6] / 1024.0,
        disk_read=a[:, 7] * kib,
        disk_write=a[:, 8] * kib,
        net_rx=a[:, 9] * kib,
        net_tx=a[:, 10] * kib,
    )
