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
import pyarrow as pa
from pyarrow import csv as pa_csv

from sova.model.trace_sets import TraceError, is_trace_set, trace_set  # noqa: F401 (where readers find them)


@functools.lru_cache(maxsize=4096)
def read_planetlab(spec: str) -> np.ndarray:
    """CPU utilisation in [0, 1], one sample per line (integer percent, 5-minute samples), from a path or
    'ARCHIVE.tar.gz:MEMBER'."""
    return parse_planetlab(_read_text(spec, "ascii"), spec)


def parse_planetlab(text: str, name: str) -> np.ndarray:
    values = []
    for n, tok in enumerate(text.split(), start=1):
        try:
            v = float(tok)
        except ValueError:
            raise TraceError(f"{name}: line {n}: expected a CPU percentage, got {tok!r}") from None
        if not 0 <= v <= 100:
            raise TraceError(f"{name}: line {n}: CPU percentage {v:g} is outside 0-100")
        values.append(v / 100.0)
    if not values:
        raise TraceError(f"{name}: empty trace; expected one CPU percentage per line")
    return np.asarray(values)


@dataclass(frozen=True)
class BitbrainsTrace:
    """Per-sample series of one Bitbrains VM; rates in bytes/s, memory in MiB, CPU in [0, 1]. ``cores`` and
    ``memory_mib`` are the most the VM was provisioned over the trace (a VM resized mid-trace needs room
    for its largest size; a sample of 0 cores is the VM switched off)."""

    cores: int
    memory_mib: float
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
    return parse_bitbrains(_read_text(spec, "utf-8"), spec)


def parse_bitbrains(text: str, spec: str) -> BitbrainsTrace:
    a = _bitbrains_table(text)
    if a is None:  # not a clean table: find the first bad line and say what is wrong with it
        a = _bitbrains_rows(text, spec)
    kib = 1024.0
    return BitbrainsTrace(
        cores=max(1, int(a[:, 1].max())),
        memory_mib=float(a[:, 5].max()) / 1024.0,
        cpu=np.clip(a[:, 4] / 100.0, 0.0, 1.0),
        mem_used=a[:, 6] / 1024.0,
        disk_read=a[:, 7] * kib,
        disk_write=a[:, 8] * kib,
        net_rx=a[:, 9] * kib,
        net_tx=a[:, 10] * kib,
    )


def _bitbrains_table(text: str) -> np.ndarray | None:
    """The samples parsed in C (pyarrow's CSV reader), or None if the text is not a clean table of finite,
    non-negative numbers: a 500-VM archive is 4 million numbers, too many for a Python loop."""
    header = 1 if text[:9].lower().startswith("timestamp") else 0
    columns = [f"c{k}" for k in range(_BB_COLUMNS)]
    try:
        table = pa_csv.read_csv(
            io.BytesIO(text.replace(";\t", ";").encode()),
            read_options=pa_csv.ReadOptions(skip_rows=header, column_names=columns, use_threads=False),
            parse_options=pa_csv.ParseOptions(delimiter=";"),
            convert_options=pa_csv.ConvertOptions(column_types=dict.fromkeys(columns, pa.float64())),
        )
    except (pa.ArrowInvalid, ValueError):  # a ragged or non-numeric line: the line-by-line parser says which
        return None
    if not table.num_rows or any(column.null_count for column in table.columns):
        return None
    a = np.column_stack([table.column(k).to_numpy() for k in range(_BB_COLUMNS)])
    if not np.all(np.isfinite(a)) or (a < 0).any():
        return None
    return a


def _bitbrains_rows(text: str, spec: str) -> np.ndarray:
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
    return np.asarray(rows)


# per trace kind: the cached reader of one file, the parser of a text, the text's encoding
KINDS = {
    "planetlab": (read_planetlab, parse_planetlab, "ascii"),
    "bitbrains": (read_bitbrains, parse_bitbrains, "utf-8"),
}


def _read_text(spec: str, encoding: str) -> str:
    """A trace file's text: a path, or 'ARCHIVE.tar.gz:MEMBER'."""
    archive, sep, member = spec.partition(".tar.gz:")
    try:
        if not sep:
            return Path(spec).read_text(encoding=encoding)
        with tarfile.open(archive + ".tar.gz", "r:gz") as tar:
            try:
                f = tar.extractfile(member)
            except KeyError:
                raise TraceError(f"{archive}.tar.gz: has no member {member!r}") from None
            if f is None:
                raise TraceError(f"{archive}.tar.gz: member {member!r} is not a file")
            return io.TextIOWrapper(f, encoding=encoding).read()
    except FileNotFoundError:
        raise TraceError(f"{spec}: no such trace file") from None
    except (OSError, UnicodeDecodeError, tarfile.TarError) as exc:
        raise TraceError(f"{spec}: cannot read ({exc})") from None


def read_traces(kind: str, specs: list[str]) -> list:
    """Many traces of one kind, in the given order; the members of an archive are read in one pass, and
    kept for the next run in this process (the profiles of a study read the same set)."""
    read = KINDS[kind][0]
    by_archive: dict[str, set[str]] = {}
    for spec in specs:
        archive, sep, member = spec.partition(".tar.gz:")
        if sep:
            by_archive.setdefault(archive + ".tar.gz", set()).add(member)
    parsed: dict[str, object] = {}
    for archive, members in by_archive.items():
        try:
            stamp = Path(archive).stat()
        except FileNotFoundError:
            raise TraceError(f"{archive}: no such trace archive") from None
        except OSError as exc:
            raise TraceError(f"{archive}: cannot read ({exc})") from None
        parsed.update(_archive_traces(kind, archive, frozenset(members), (stamp.st_mtime_ns, stamp.st_size)))
    missing = [s for s in specs if ".tar.gz:" in s and s not in parsed]
    if missing:
        archive, _, member = missing[0].partition(".tar.gz:")
        raise TraceError(f"{archive}.tar.gz: has no member {member!r}")
    return [parsed[s] if s in parsed else read(s) for s in specs]


@functools.lru_cache(maxsize=2)
def _archive_traces(kind: str, archive: str, members: frozenset[str], stamp: tuple[int, int]) -> dict[str, object]:
    """The named members of an archive, parsed (`stamp`, the file's mtime and size, renews the cache)."""
    _, parse, encoding = KINDS[kind]
    parsed: dict[str, object] = {}
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for info in tar:
                if info.name in members and info.isfile():
                    text = io.TextIOWrapper(tar.extractfile(info), encoding=encoding).read()
                    parsed[f"{archive}:{info.name}"] = parse(text, f"{archive}:{info.name}")
    except (OSError, UnicodeDecodeError, tarfile.TarError) as exc:  # read_traces found it there a moment ago
        raise TraceError(f"{archive}: cannot read ({exc})") from None
    return parsed
