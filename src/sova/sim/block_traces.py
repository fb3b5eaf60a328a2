"""Readers for real block-IO traces: one disk's requests (when, how large, read or write, where) from the
public traces in shared/traces/, for the ``block-trace`` workload kind to replay.

Four formats, each a CSV file, plain or compressed (.gz, .bz2: told by the file's first bytes):

- ``cloudphysics``: CloudPhysics VMware vSCSI traces as libCacheSim's CSV (Waldspurger et al., SHARDS,
  FAST'15): header ``version,time,op,size,lbn``; time in whole seconds, op the SCSI opcode in hex
  (28 READ(10), 2a WRITE(10); the 6-, 12- and 16-byte forms too), size in bytes, lbn in 512-byte sectors;
- ``msr``: MSR Cambridge (SNIA IOTTA 388), no header: Windows FILETIME (100 ns ticks), host, disk number,
  Read|Write, offset and size in bytes, response time;
- ``systor``: SNIA SYSTOR'17 VDI traces (Lee et al., SYSTOR'17): header ``Timestamp,Response,IOType,LUN,
  Offset,Size``; epoch seconds with a fraction, R|W, offset and size in bytes;
- ``tencent``: Tencent Cloud Block Storage (Zhang et al., ATC'20), no header: epoch seconds, offset and
  size in 512-byte sectors, 0 read / 1 write, volume id.

A trace is read into arrays sorted by arrival (a stable sort: requests of one instant keep the file's
order), its clock starting at its first request. A trace whose clock counts whole seconds (CloudPhysics,
Tencent) does not say when within a second a request came: the requests of one second are spread evenly
over it, in file order, so a step shorter than a second sees that second's rate rather than all of it at
the second's start. One loop of a trace lasts from its first request to one mean inter-arrival time after
its last (whole-second clocks: to the end of its last second), so a trace replayed in a loop keeps its
mean rate.

MSR, SYSTOR and Tencent files may hold several disks (MSR's disk number, SYSTOR's LUN, Tencent's volume
id): one is replayed, by default the busiest. Parsed traces are kept per (file, format, volume) for the
process, since several VMs often replay one file. Every problem raises ``TraceError`` naming the file and,
for a bad line, the line and what was expected.
"""

from __future__ import annotations

import bz2
import functools
import gzip
import os
from dataclasses import dataclass

import numpy as np

from sova.sim.traces import TraceError

FORMATS = ("cloudphysics", "msr", "systor", "tencent")
BUSIEST = -1  # the volume to replay by default: the one with the most requests
SECTOR = 512  # bytes per sector of CloudPhysics' lbn and of Tencent's offset and size
FILETIME_TICK = 1e-7  # seconds per MSR timestamp tick (Windows FILETIME counts 100 ns)

# SCSI opcodes (SBC-3): READ and WRITE in their 6-, 10-, 12- and 16-byte command forms
_SCSI_READS = ("08", "28", "a8", "88")
_SCSI_WRITES = ("0a", "2a", "aa", "8a")


@dataclass(frozen=True)
class BlockTrace:
    """One disk's requests in order of arrival: arrival time (s from the first request), size and offset
    (bytes), whether each reads; ``duration`` is one loop of the trace (s)."""

    source: str
    format: str
    volume: int | None  # the disk, LUN or volume replayed (None: the file has one, or all were taken)
    time: np.ndarray
    size: np.ndarray
    read: np.ndarray
    offset: np.ndarray
    duration: float

    def __len__(self) -> int:
        return len(self.time)


@dataclass(frozen=True)
class _Columns:
    """What a format's parser takes from the file: per request, before sorting and the clock's start."""

    time: np.ndarray  # seconds, or ticks for MSR (int64: FILETIME needs 57 bits)
    size: np.ndarray
    read: np.ndarray
    offset: np.ndarray
    volume: np.ndarray | None
    whole_seconds: bool
    tick: float = 1.0  # seconds per unit of `time`


def read_block_trace(path: str | os.PathLike, format: str = "auto", volume: int | None = BUSIEST) -> BlockTrace:
    """One trace file's requests; `format` one of FORMATS or "auto" (told by its first line); `volume`
    the disk, LUN or volume id to keep (BUSIEST: the one with the most requests; None: all of them)."""
    if format != "auto" and format not in FORMATS:
        raise TraceError(
            f"{path}: unknown block-trace format {format!r}; expected 'auto' or one of {', '.join(FORMATS)}"
        )
    return _read_cached(os.path.abspath(path), format, volume)


@functools.lru_cache(maxsize=32)
def _read_cached(path: str, format: str, volume: int | None) -> BlockTrace:
    lines = _lines(path)
    fmt = detect_format(lines, path) if format == "auto" else format
    cols = _PARSERS[fmt](lines, path)
    keep, chosen = _select(cols.volume, volume, path, fmt)
    order = np.argsort(cols.time[keep], kind="stable")
    time, size = cols.time[keep][order], cols.size[keep][order]
    read, offset = cols.read[keep][order], cols.offset[keep][order]
    time = (time - time[0]).astype(float) * cols.tick
    if cols.whole_seconds:
        time, duration = _spread_over_seconds(time), float(time[-1] + 1)
    else:
        span = float(time[-1])
        duration = span * len(time) / (len(time) - 1) if span > 0 else 1.0
    arrays = [time, size.astype(float), read.astype(bool), offset.astype(float)]
    for a in arrays:
        a.setflags(write=False)  # shared by every replay of the file
    return BlockTrace(path, fmt, chosen, *arrays, duration=duration)


def detect_format(lines: list[str], path: str) -> str:
    """The format of a trace from its first line: CloudPhysics and SYSTOR by their headers, MSR by its
    seven fields with Read or Write, Tencent by five integer fields."""
    number, first = next(((n, line) for n, line in enumerate(lines, start=1) if line.strip()), (1, ""))
    fields = [f.strip() for f in first.split(",")]
    if [f.lower() for f in fields] == ["version", "time", "op", "size", "lbn"]:
        return "cloudphysics"
    if [f.lower() for f in fields[:3]] == ["timestamp", "response", "iotype"]:
        return "systor"
    if len(fields) == 7 and fields[3].lower() in ("read", "write"):
        return "msr"
    if len(fields) == 5 and all(f.isdigit() for f in fields):
        return "tencent"
    raise TraceError(
        f"{path}: line {number}: cannot tell the block trace's format from {first[:80]!r}; expected a CloudPhysics "
        "header (version,time,op,size,lbn), a SYSTOR header (Timestamp,Response,IOType,...), an MSR line "
        "(7 fields with Read|Write) or a Tencent line (5 integers); or name it with format"
    )


def _lines(path: str) -> list[str]:
    """The file's lines, decompressed if its first bytes say gzip or bzip2."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        elif raw[:3] == b"BZh":
            raw = bz2.decompress(raw)
        return raw.decode("utf-8").splitlines()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such trace file") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a directory; expected a block trace file") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path}: cannot read ({exc})") from None


def _table(lines: list[str], path: str, n_fields: int, header: str) -> tuple[list[list[str]], np.ndarray]:
    """The comma-separated fields of every request line, one list of texts per column, and each request's
    line number; a first line starting with `header` (case aside) is skipped, blank lines too. The lines
    are split as one text (a Python loop per line would be the parse's main cost)."""
    numbers = [n for n, line in enumerate(lines, start=1) if line.strip()]
    if numbers and header and lines[numbers[0] - 1].lstrip().lower().startswith(header):
        numbers = numbers[1:]
    if not numbers:
        raise TraceError(f"{path}: no requests; expected one request per line")
    kept = [lines[n - 1] for n in numbers]
    commas = np.fromiter((line.count(",") for line in kept), dtype=np.int64, count=len(kept))
    if (commas != n_fields - 1).any():
        k = int(np.argmax(commas != n_fields - 1))
        raise TraceError(
            f"{path}: line {numbers[k]}: expected {n_fields} comma-separated fields, got {commas[k] + 1} "
            f"({kept[k][:80]!r})"
        )
    flat = ",".join(kept).split(",")
    return [flat[i::n_fields] for i in range(n_fields)], np.array(numbers)


def _numbers(column: list[str], numbers: np.ndarray, path: str, what: str, integer: bool = False) -> np.ndarray:
    """A column as finite, non-negative numbers (int64 where `integer`); else an error at its first bad line."""
    try:
        values = np.array(column, dtype=np.int64 if integer else float)
        bad = values < 0 if integer else ~np.isfinite(values) | (values < 0)
    except (ValueError, OverflowError):
        bad = np.array([not _is_number(text, integer) for text in column])
    if bad.any():
        k = int(np.argmax(bad))
        kind = "a non-negative integer" if integer else "a finite, non-negative number"
        raise TraceError(f"{path}: line {numbers[k]}: expected {what} as {kind}, got {column[k].strip()!r}")
    return values


def _is_number(text: str, integer: bool) -> bool:
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        return False
    return 0 <= value < 2**63 and (integer or np.isfinite(value))


def _flags(column: list[str], numbers: np.ndarray, path: str, reads: tuple, writes: tuple) -> np.ndarray:
    """A read/write column as booleans (True: read); any other value is an error at its line."""
    text = np.array([value.strip().lower() for value in column])
    read, write = np.isin(text, reads), np.isin(text, writes)
    if not (read | write).all():
        k = int(np.argmax(~(read | write)))
        expected = " or ".join(repr(x) for x in (*reads, *writes))
        raise TraceError(f"{path}: line {numbers[k]}: expected the IO type as {expected}, got {column[k].strip()!r}")
    return read


def _cloudphysics(lines: list[str], path: str) -> _Columns:
    t, n = _table(lines, path, 5, "version")
    read = _flags(t[2], n, path, _SCSI_READS, _SCSI_WRITES)
    lbn = _numbers(t[4], n, path, "the logical block number")
    return _Columns(
        _numbers(t[1], n, path, "the time in whole seconds", integer=True),
        _numbers(t[3], n, path, "the size in bytes"),
        read,
        lbn * SECTOR,
        None,
        whole_seconds=True,
    )


def _msr(lines: list[str], path: str) -> _Columns:
    t, n = _table(lines, path, 7, "")
    return _Columns(
        _numbers(t[0], n, path, "the timestamp in 100 ns ticks", integer=True),
        _numbers(t[5], n, path, "the size in bytes"),
        _flags(t[3], n, path, ("read",), ("write",)),
        _numbers(t[4], n, path, "the offset in bytes"),
        _numbers(t[2], n, path, "the disk number", integer=True),
        whole_seconds=False,
        tick=FILETIME_TICK,
    )


def _systor(lines: list[str], path: str) -> _Columns:
    t, n = _table(lines, path, 6, "timestamp")
    return _Columns(
        _numbers(t[0], n, path, "the timestamp in seconds"),
        _numbers(t[5], n, path, "the size in bytes"),
        _flags(t[2], n, path, ("r",), ("w",)),
        _numbers(t[4], n, path, "the offset in bytes"),
        _numbers(t[3], n, path, "the LUN", integer=True),
        whole_seconds=False,
    )


def _tencent(lines: list[str], path: str) -> _Columns:
    t, n = _table(lines, path, 5, "")
    return _Columns(
        _numbers(t[0], n, path, "the timestamp in whole seconds", integer=True),
        _numbers(t[2], n, path, "the size in sectors") * SECTOR,
        _flags(t[3], n, path, ("0",), ("1",)),
        _numbers(t[1], n, path, "the offset in sectors") * SECTOR,
        _numbers(t[4], n, path, "the volume id", integer=True),
        whole_seconds=True,
    )


_PARSERS = {"cloudphysics": _cloudphysics, "msr": _msr, "systor": _systor, "tencent": _tencent}


def _select(
    volumes: np.ndarray | None, volume: int | None, path: str, fmt: str
) -> tuple[np.ndarray | slice, int | None]:
    """The requests of the chosen volume (a mask, or every one) and its id."""
    if volumes is None:
        if volume not in (None, BUSIEST):
            raise TraceError(f"{path}: a {fmt} trace holds one disk; expected no volume (or {BUSIEST}), got {volume}")
        return slice(None), None
    if volume is None:
        return slice(None), None
    ids, counts = np.unique(volumes, return_counts=True)
    chosen = int(ids[np.argmax(counts)]) if volume == BUSIEST else int(volume)
    keep = volumes == chosen
    if not keep.any():
        few = ", ".join(str(i) for i in ids[:8]) + (", ..." if len(ids) > 8 else "")
        raise TraceError(f"{path}: no requests of volume {chosen}; expected one of the trace's volumes ({few})")
    return keep, chosen


def _spread_over_seconds(seconds: np.ndarray) -> np.ndarray:
    """Times in whole seconds (sorted) spread evenly over their second: the k-th of m requests of second s
    comes at s + k / m."""
    _, first, count = np.unique(seconds, return_index=True, return_counts=True)
    rank = np.arange(len(seconds)) - np.repeat(first, count)
    return seconds + rank / np.repeat(count, count)
