"""Readers for VM traces that carry lifetimes (arrival and departure), not only utilisation series.

* OpenDC workload trace, Parquet schema v4 (atlarge-research/opendc, site/docs/documentation/Input/Workload.md;
  shared/traces/bitbrains/opendc_bitbrains_small_v4/ is 50 Bitbrains GWA-T-12 VMs from atlarge-research/
  opendc-traces). tasks.parquet: id, submission_time (ms since the epoch, or a timestamp), duration (ms),
  cpu_count, cpu_capacity (MHz, whole VM: 2 cores of 2926 MHz give 5852), mem_capacity (KiB, not the MB of
  OpenDC's page: a 4 GiB VM holds 4194304, Bitbrains' "[KB]" unchanged). fragments.parquet: id, duration
  (ms), cpu_usage (MHz, whole VM); a VM's fragments follow each other in time, in file order.
* Azure Public Dataset V1, 2017 (Azure/AzurePublicDataset, AzurePublicDatasetV1.md; cite Cortez et al.,
  "Resource Central", SOSP 2017). vmtable.csv.gz, no header: vm id, subscription, deployment, created,
  deleted (s from the trace start), max/avg/p95 CPU (%), category, cores, memory (GB).
  vm_cpu_readings-file-*-of-125.csv.gz: timestamp (s), vm id, min/max/avg CPU (%), every 300 s.

Choices. Times count from the earliest submission or creation. OpenDC always gives a duration; Azure V1
has no "still running" flag, but its last reading is at 2,591,700 s (30 days), and a VM deleted then
outlived the trace: depart_s = inf. Azure sizes: a number as is, an open bucket ">N" (">24" cores, ">64"
GB) at its bound N, an under-estimate; GB are GiB (1.75 GB = 1792 MiB). OpenDC: a VM's step is its own
smallest positive fragment duration (300 s for all 50 sample VMs; a coarse VM is not inflated to a finer
trace-wide step; a VM without fragments gets the others' smallest, else 300 s); a cell holds the
time-weighted mean of the fragments overlapping it: sample-and-hold when durations are multiples of the
step, unbiased when not (the sample has 599 s fragments), keeping the mean of cpu_usage exactly. cpu = mean
/ cpu_capacity clipped to [0, 1] (9 sample VMs exceed capacity by up to 6 %). Azure: cpu = avg / 100 clipped
to [0, 1], sample k at created + 300 k s (between slots: the earlier), up to the last reading; a missing
reading holds the one before, slots before the first are idle (0), a repeated reading replaces the earlier.
Readings and fragments of VMs absent from vmtable / tasks, and Azure readings outside a VM's life, are
skipped: excerpts need not share VMs (the 10-VM sample shares none with its 100 readings).

Results are cached per path and ordered by arrive_s, then name. Errors are ``TraceError`` naming the file,
the 1-based row (Parquet) or line (CSV), the column and what was expected; a failing trace returns nothing.
"""

from __future__ import annotations

import csv
import functools
import gzip
import math
import operator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from sova.sim.traces import TraceError


@dataclass(frozen=True, eq=False)  # compared by identity: an ndarray field has no single truth value
class VMLifetimeTrace:
    """One VM's life: arrival and departure in s from the trace start, CPU in [0, 1] every ``interval_s``
    from ``arrive_s`` (sample-and-hold; empty means idle), memory in MiB, capacity in MHz (whole VM)."""

    name: str
    arrive_s: float
    depart_s: float
    cores: int
    memory_mib: float
    interval_s: float
    cpu: np.ndarray
    capacity_mhz: float | None = None


def read_opendc(path: str) -> list[VMLifetimeTrace]:
    """The VMs of an OpenDC v4 trace directory holding tasks.parquet and fragments.parquet."""
    return list(_read_opendc(path))


def read_azure(path: str) -> list[VMLifetimeTrace]:
    """The VMs of an Azure V1 directory: vmtable.csv.gz and every vm_cpu_readings-*.csv.gz, in name order."""
    return list(_read_azure(path))


_ID, _TIME, _NUMBER = "an integer or string id", "an integer (ms since the epoch) or a timestamp", "a number"
_TASKS = {"id": _ID, "submission_time": _TIME, "duration": _NUMBER, "cpu_count": _NUMBER}
_TASKS |= {"cpu_capacity": _NUMBER, "mem_capacity": _NUMBER}
_FRAGMENTS = {"id": _ID, "duration": _NUMBER, "cpu_usage": _NUMBER}
_BITBRAINS_STEP_MS = 300_000  # GWA-T-12 samples every 5 minutes (Shen et al., CCGrid 2015)


@functools.lru_cache(maxsize=16)
def _read_opendc(path: str) -> tuple[VMLifetimeTrace, ...]:
    tasks = _parquet(_existing(Path(path) / "tasks.parquet"), _TASKS)
    frags = _parquet(_existing(Path(path) / "fragments.parquet"), _FRAGMENTS)
    _check(tasks, "submission_time", -np.inf, "a finite number of ms")
    _check(tasks, "duration", 0, "a finite, non-negative number of ms")
    _check(tasks, "cpu_count", 1, "a whole number of cores, at least 1", whole=True)
    _check(tasks, "cpu_capacity", np.finfo(float).tiny, "a positive, finite number of MHz")
    _check(tasks, "mem_capacity", 0, "a finite, non-negative number of KiB")
    _check(frags, "duration", 0, "a finite, non-negative number of ms")
    _check(frags, "cpu_usage", 0, "a finite, non-negative number of MHz")
    same = tasks["id"].type == frags["id"].type  # else integer ids in one file, strings in the other: as strings
    ids, frag_ids = (t["id"] if same else t["id"].cast(pa.string()) for t in (tasks, frags))
    names = np.array(ids.cast(pa.string()).to_pylist(), dtype=object)
    _once(tasks["file"], "row", names)
    vm = pc.fill_null(pc.index_in(frag_ids, value_set=ids.combine_chunks()), -1).to_numpy()
    known = vm >= 0  # fragments of a task that is not in tasks.parquet are skipped
    step, cpu = _resample(vm[known], frags["duration"][known], frags["cpu_usage"][known], tasks["cpu_capacity"])
    submit = tasks["submission_time"].astype(float)
    arrive = (submit - submit.min()) / 1000.0 if len(submit) else submit
    depart = arrive + tasks["duration"] / 1000.0
    columns = (arrive, depart, tasks["cpu_count"].astype(int), tasks["mem_capacity"] / 1024.0, step / 1000.0)
    rows = zip(names.tolist(), *(c.tolist() for c in columns), cpu, tasks["cpu_capacity"].tolist(), strict=True)
    return tuple(sorted((VMLifetimeTrace(*row) for row in rows), key=operator.attrgetter("arrive_s", "name")))


def _resample(vm: np.ndarray, dur_ms: np.ndarray, usage: np.ndarray, capacity: np.ndarray):
    """Per VM, the step in ms and the CPU fraction of each cell: usage integrated over the cell (np.interp of the
    piecewise-linear integral, all VMs end to end on one time axis: no Python loop over fragments) / its length."""
    n = len(capacity)
    order = np.argsort(vm, kind="stable")  # stable: a VM's fragments stay in time order
    vm, dur, usage = vm[order], dur_ms[order].astype(float), usage[order].astype(float)
    counts = np.bincount(vm, minlength=n)
    total = np.bincount(vm, weights=dur, minlength=n)
    step = np.full(n, np.inf)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))[counts > 0]
    step[counts > 0] = np.minimum.reduceat(np.where(dur > 0, dur, np.inf), starts)
    cells = np.where(np.isfinite(step), np.ceil(total / np.where(np.isfinite(step), step, 1.0)), 0).astype(np.int64)
    points = np.where(cells > 0, cells + 1, 0)
    owner = np.repeat(np.arange(n), points)
    k = np.arange(points.sum()) - np.repeat(np.cumsum(points) - points, points)
    base = np.cumsum(total) - total
    t = base[owner] + np.minimum(k * step[owner], total[owner])
    integral = np.interp(t, np.concatenate(([0.0], np.cumsum(dur))), np.concatenate(([0.0], np.cumsum(usage * dur))))
    inside = k[1:] > 0  # a cell lies between two points of the same VM
    mean = np.diff(integral)[inside] / np.diff(t)[inside]
    fraction = np.clip(mean / capacity[owner[1:][inside]], 0.0, 1.0)
    fraction.flags.writeable = False
    fallback = step[np.isfinite(step)].min() if np.isfinite(step).any() else _BITBRAINS_STEP_MS
    return np.where(np.isfinite(step), step, fallback), np.split(fraction, np.cumsum(cells)[:-1]) if n else []


_VMTABLE = {"vm_id": pa.string(), "subscription_id": pa.string(), "deployment_id": pa.string()}
_VMTABLE |= {"created": pa.int64(), "deleted": pa.int64(), "max_cpu": pa.float64(), "avg_cpu": pa.float64()}
_VMTABLE |= {"p95_max_cpu": pa.float64(), "category": pa.string(), "cores": pa.string(), "memory_gb": pa.string()}
_READINGS = {"timestamp": pa.int64(), "vm_id": pa.string(), "min_cpu": pa.float64()}
_READINGS |= {"max_cpu": pa.float64(), "avg_cpu": pa.float64()}
_AZURE_STEP_S = 300  # 5-minute readings (AzurePublicDatasetV1.md)
_AZURE_LAST_READING_S = 2_591_700  # 30 days less one step: a VM deleted then outlived the trace


@functools.lru_cache(maxsize=16)
def _read_azure(path: str) -> tuple[VMLifetimeTrace, ...]:
    file = _existing(Path(path) / "vmtable.csv.gz")
    table = _csv(file, _VMTABLE)
    names = table["vm_id"].to_numpy(zero_copy_only=False)
    created, deleted = table["created"].to_numpy(), table["deleted"].to_numpy()
    _first_bad(file, "line", "created", created, created < 0, "a non-negative number of s")
    _first_bad(file, "line", "deleted", deleted, deleted < created, "a time no earlier than 'created'")
    _once(file, "line", names)
    cores = _buckets(file, "cores", table["cores"], whole=True)
    memory_gb = _buckets(file, "memory_gb", table["memory_gb"], whole=False)
    parts = [(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))]  # (VM, time, avg CPU) per file
    for reading_file in sorted(file.parent.glob("vm_cpu_readings-*.csv.gz")):
        readings = _csv(reading_file, _READINGS)
        ts, avg = readings["timestamp"].to_numpy(), readings["avg_cpu"].to_numpy()
        _first_bad(reading_file, "line", "timestamp", ts, ts < 0, "a non-negative number of s")
        _first_bad(reading_file, "line", "avg_cpu", avg, ~(avg >= 0) | ~np.isfinite(avg), "a percentage >= 0")
        vm = pc.fill_null(pc.index_in(readings["vm_id"], value_set=table["vm_id"]), -1).to_numpy()
        keep = vm >= 0  # readings of a VM that vmtable does not list, or outside its life, are skipped
        keep[keep] = (ts[keep] >= created[vm[keep]]) & (ts[keep] <= deleted[vm[keep]])
        parts.append((vm[keep], ts[keep], avg[keep]))
    cpu = _held_series(len(names), created, *(np.concatenate(p) for p in zip(*parts, strict=True)))
    arrive = created - (created.min() if len(created) else 0)
    depart = np.where(deleted >= _AZURE_LAST_READING_S, np.inf, arrive + (deleted - created))
    interval = np.full(len(names), float(_AZURE_STEP_S))
    columns = (arrive.astype(float), depart, cores.astype(int), memory_gb * 1024.0, interval)
    rows = zip(names.tolist(), *(c.tolist() for c in columns), cpu, strict=True)
    return tuple(sorted((VMLifetimeTrace(*row) for row in rows), key=operator.attrgetter("arrive_s", "name")))


def _held_series(n: int, created: np.ndarray, vm: np.ndarray, ts: np.ndarray, avg: np.ndarray) -> list[np.ndarray]:
    """Per VM, avg CPU / 100 at slot (t - created) // 300, gaps holding the slot before, leading gaps 0."""
    slot = (ts - created[vm]) // _AZURE_STEP_S
    length = np.zeros(n, np.int64)
    np.maximum.at(length, vm, slot + 1)
    offset = np.cumsum(length) - length
    position = offset[vm] + slot
    value = np.zeros(length.sum())
    value[position] = np.clip(avg / 100.0, 0.0, 1.0)
    source = np.full(len(value), -1)
    source[position] = position
    source = np.maximum.accumulate(source)
    held = np.where(source >= np.repeat(offset, length), value[np.maximum(source, 0)], 0.0)
    held.flags.writeable = False
    return np.split(held, np.cumsum(length)[:-1]) if n else []


def _buckets(file: Path, column: str, values: pa.ChunkedArray, *, whole: bool) -> np.ndarray:
    """A size per VM from a number or an open bucket '>N' (taken at N); each distinct string is parsed once."""
    unique, inverse = np.unique(values.to_numpy(zero_copy_only=False).astype(str), return_inverse=True)
    sizes = np.empty(len(unique))
    for j, text in enumerate(unique):
        try:
            size = float(text.strip().removeprefix(">"))
        except ValueError:
            size = math.nan
        if not (math.isfinite(size) and size > 0 and (not whole or size.is_integer())):
            line = int(np.flatnonzero(inverse == j)[0]) + 1
            what = "a whole number of cores" if whole else "a number of GB"
            raise TraceError(f"{file}: line {line}: column {column!r} is {str(text)!r}; expected {what} or '>N'")
        sizes[j] = size
    return sizes[inverse]


def _once(file: Path, place: str, names: np.ndarray) -> None:
    unique, first = np.unique(names, return_index=True)
    if len(unique) < len(names):
        i = int(np.setdiff1d(np.arange(len(names)), first)[0])
        raise TraceError(f"{file}: {place} {i + 1}: id {names[i]!r} appears twice; expected one {place} per VM")


def _existing(file: Path) -> Path:
    if not file.is_file():
        raise TraceError(f"{file}: no such trace file" if file.parent.is_dir() else f"{file.parent}: no such directory")
    return file


def _parquet(file: Path, expected: dict[str, str]) -> dict:
    """A Parquet file's columns (ids in Arrow, numbers in numpy, times in ms), checked for presence, type and nulls."""
    try:
        schema = pq.read_schema(file)
        table = pq.read_table(file, columns=[c for c in expected if c in schema.names])
    except (OSError, pa.ArrowException) as exc:
        raise TraceError(f"{file}: cannot read as Parquet ({exc})") from None
    out: dict = {"file": file}
    for column, what in expected.items():
        if column not in schema.names:
            raise TraceError(f"{file}: no column {column!r}; expected columns {', '.join(expected)}")
        kind = schema.field(column).type
        numeric = pa.types.is_integer(kind) or pa.types.is_floating(kind)
        ok = numeric or (what == _ID and pa.types.is_string(kind)) or (what == _TIME and pa.types.is_timestamp(kind))
        if not ok:
            raise TraceError(f"{file}: column {column!r} is of type {kind}; expected {what}")
        values = table[column]
        _no_null(file, "row", column, values, what)
        if pa.types.is_timestamp(kind):
            values = values.cast(pa.timestamp("ms")).cast(pa.int64())
        out[column] = values if what == _ID else values.to_numpy()
    return out


def _check(columns: dict, column: str, low: float, what: str, *, whole: bool = False) -> None:
    values = columns[column]
    bad = ~np.isfinite(values) | (values < low) | ((values != np.round(values)) if whole else False)
    _first_bad(columns["file"], "row", column, values, bad, what, ids=columns["id"])


def _first_bad(file, place, column, values, bad, what, ids=None) -> None:
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        value = values[i].item() if isinstance(values[i], np.generic) else values[i]
        vm = f" (id {ids[i]})" if ids is not None else ""
        raise TraceError(f"{file}: {place} {i + 1}{vm}: column {column!r} is {value!r}; expected {what}")


def _no_null(file: Path, place: str, column: str, values: pa.ChunkedArray, what: str) -> None:
    if values.null_count:
        i = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
        raise TraceError(f"{file}: {place} {i + 1}: column {column!r} is empty (or NA); expected {what}")


def _csv(file: Path, columns: dict[str, pa.DataType]) -> pa.Table:
    """A headerless gzipped CSV parsed by pyarrow; if it fails, the first bad line is found and named."""
    options = pacsv.ReadOptions(column_names=list(columns))
    try:
        table = pacsv.read_csv(file, read_options=options, convert_options=pacsv.ConvertOptions(column_types=columns))
    except pa.ArrowInvalid as exc:
        if _csv_bad_line(file, columns) == 0:  # no line at all
            return pa.table({c: pa.array([], t) for c, t in columns.items()})
        raise TraceError(f"{file}: cannot parse ({exc})") from None
    except (OSError, pa.ArrowException) as exc:
        raise TraceError(f"{file}: cannot read ({exc})") from None
    for column in columns:
        _no_null(file, "line", column, table[column], "a number")
    return table


def _csv_bad_line(file: Path, columns: dict[str, pa.DataType]) -> int:
    """Raise a TraceError naming the first line that does not parse; else the number of lines."""
    n = 0
    try:
        with gzip.open(file, "rt", encoding="utf-8", newline="") as text:
            for n, row in enumerate(csv.reader(text), start=1):
                if len(row) != len(columns):
                    raise TraceError(f"{file}: line {n}: {len(row)} ','-separated columns; expected {len(columns)}")
                for value, (column, kind) in zip(row, columns.items(), strict=True):
                    parse = int if pa.types.is_integer(kind) else float if pa.types.is_floating(kind) else str
                    try:
                        parse(value)
                    except ValueError:
                        what = "an integer" if parse is int else "a number"
                        raise TraceError(f"{file}: line {n}: column {column!r} is {value!r}; expected {what}") from None
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as exc:
        raise TraceError(f"{file}: line {n + 1}: cannot read ({exc})") from None
    return n
