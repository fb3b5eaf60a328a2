"""What a cluster's VMs were seen to ask for, sample by sample: the series a cluster snapshot exports and the
`observed` workload kind replays.

One Parquet file, long format, one row per (VM, sample) and one per (VM, peer, sample):

- ``vm``: the VM; ``peer``: null on the VM's own rows, else the VM it sent to (``net_bits``, bit/s);
- ``t``: s from the window's start (samples evenly spaced by the file's ``sova.interval``);
- ``cpu`` (cores wanted: run plus runnable-but-waiting time per second), ``memory_used`` (MiB),
  ``read_iops``, ``write_iops``, ``read_bps``, ``write_bps`` (bytes/s), ``tx_bits`` and ``rx_bits``
  (bit/s to and from outside the cluster), ``io_outstanding`` (the IOs it had in flight, mean over the sample:
  the IOs' summed time per second, by Little's law; a file without it reads as 0 throughout) on the VM's own
  rows.

Written atomically; read back with every value checked (finite, not negative), naming the file, the column and
the VM where one is not.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sova.model.atomic_file import write_atomically
from sova.model.schema import Reader
from sova.model.trace_sets import TraceError

VM_COLUMNS = (
    *("cpu", "memory_used", "read_iops", "write_iops", "read_bps", "write_bps", "tx_bits", "rx_bits"),
    "io_outstanding",
)
OPTIONAL_COLUMNS = ("io_outstanding",)  # added later: a file written before reads as 0 (open-loop IO)
META_KEY = b"sova.observed"


class DemandFileError(TraceError):
    """An observed-demand file that cannot be read or holds what it should not."""


@dataclass(frozen=True)
class ObservedDemand:
    """Per-VM and per-flow series over one window, all `samples` long."""

    interval: float  # s between samples
    start: float  # the driver's clock at the window's start (s)
    vms: tuple[str, ...]
    series: dict[str, np.ndarray]  # column of VM_COLUMNS -> VMs x samples
    flow_src: tuple[str, ...] = ()
    flow_dst: tuple[str, ...] = ()
    flow_bits: np.ndarray | None = None  # flows x samples, bit/s

    @property
    def samples(self) -> int:
        return next(iter(self.series.values())).shape[1] if self.series else 0

    @property
    def length(self) -> float:
        """Seconds the window covers."""
        return self.samples * self.interval

    def row(self, vm: str) -> int:
        return self._rows[vm]

    def has(self, vm: str) -> bool:
        return vm in self._rows

    @functools.cached_property
    def _rows(self) -> dict[str, int]:
        return {name: k for k, name in enumerate(self.vms)}


def write_demand(path: Path, demand: ObservedDemand) -> None:
    """Write the file atomically (a temporary beside it, renamed over it)."""
    write_atomically(path, demand_bytes(demand))


def demand_bytes(demand: ObservedDemand) -> bytes:
    """The file's bytes (Parquet), as `write_demand` writes them and a manage's socket sends them."""
    samples, n_vms = demand.samples, len(demand.vms)
    times = np.arange(samples) * demand.interval
    n_flows = len(demand.flow_src)
    flow_bits = demand.flow_bits if demand.flow_bits is not None else np.zeros((0, samples))
    null_values = pa.nulls(n_flows * samples, pa.float64())

    def names(values: tuple[str, ...]) -> np.ndarray:
        return np.repeat(np.asarray(values, dtype=object), samples)

    columns = {
        "vm": pa.array(np.concatenate([names(demand.vms), names(demand.flow_src)]), pa.string()),
        "peer": pa.concat_arrays(
            [pa.nulls(n_vms * samples, pa.string()), pa.array(names(demand.flow_dst), pa.string())]
        ),
        "t": pa.array(np.concatenate([np.tile(times, n_vms), np.tile(times, n_flows)])),
        **{
            column: pa.concat_arrays([pa.array(demand.series[column].reshape(-1).astype(float)), null_values])
            for column in VM_COLUMNS
        },
        "net_bits": pa.concat_arrays(
            [pa.nulls(n_vms * samples, pa.float64()), pa.array(flow_bits.reshape(-1).astype(float))]
        ),
    }
    table = pa.table(columns).replace_schema_metadata(
        {META_KEY: json.dumps({"interval": demand.interval, "start": demand.start}).encode()}
    )
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def read_demand(path: str | Path) -> ObservedDemand:
    """The file's series (read once per file and modification time)."""
    where = Path(path)
    try:
        stat = where.stat()
    except OSError as exc:
        raise DemandFileError(f"{where}: {exc.strerror or exc}; expected an observed-demand Parquet file") from None
    return _read(str(where), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _read(path: str, _mtime: int, _size: int) -> ObservedDemand:
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise DemandFileError(f"{path}: {exc}; expected an observed-demand Parquet file") from None
    meta = _metadata(path, table.schema.metadata or {})
    for column in OPTIONAL_COLUMNS:
        if column not in table.column_names:
            table = table.append_column(column, pa.array(np.zeros(table.num_rows)))
    missing = [column for column in ("vm", "peer", "t", *VM_COLUMNS, "net_bits") if column not in table.column_names]
    if missing:
        raise DemandFileError(f"{path}: no column {', '.join(missing)}; expected those of docs/scenario-format.md")
    vm = np.asarray(table["vm"].to_pylist(), dtype=object)
    peer = np.asarray(table["peer"].to_pylist(), dtype=object)
    t = table["t"].to_numpy(zero_copy_only=False).astype(float)
    if vm.size and (any(not isinstance(name, str) or not name for name in vm) or not np.isfinite(t).all()):
        raise DemandFileError(f"{path}: a row without a VM name or with a time that is not finite")
    sample = np.rint(t / meta["interval"]).astype(np.int64) if vm.size else np.zeros(0, dtype=np.int64)
    own = np.array([name is None for name in peer], dtype=bool)
    vms = tuple(dict.fromkeys(vm[own]))
    samples = int(sample.max()) + 1 if sample.size else 0
    series = {
        column: _grid(path, column, vm[own], sample[own], _values(table, column)[own], vms, samples)
        for column in VM_COLUMNS
    }
    pairs = tuple(dict.fromkeys(zip(vm[~own], peer[~own], strict=True)))
    flow_bits = _grid(
        path,
        "net_bits",
        np.array([f"{src}\0{dst}" for src, dst in zip(vm[~own], peer[~own], strict=True)], dtype=object),
        sample[~own],
        _values(table, "net_bits")[~own],
        tuple(f"{src}\0{dst}" for src, dst in pairs),
        samples,
    )
    return ObservedDemand(
        meta["interval"],
        meta["start"],
        vms,
        series,
        tuple(src for src, _ in pairs),
        tuple(dst for _, dst in pairs),
        flow_bits,
    )


def _metadata(path: str, raw: dict) -> dict:
    try:
        meta = json.loads(raw[META_KEY])
        interval, start = float(meta["interval"]), float(meta["start"])
    except (KeyError, ValueError, TypeError):
        raise DemandFileError(
            f"{path}: no {META_KEY.decode()} metadata; expected a file `sova snapshot export` wrote"
        ) from None
    if not (np.isfinite(interval) and interval > 0 and np.isfinite(start)):
        raise DemandFileError(f"{path}: sample interval {interval!r}; expected a finite number of seconds above 0")
    return {"interval": interval, "start": start}


def _values(table: pa.Table, column: str) -> np.ndarray:
    return table[column].to_numpy(zero_copy_only=False).astype(float)


def _grid(
    path: str, column: str, keys: np.ndarray, sample: np.ndarray, values: np.ndarray, order: tuple, samples: int
) -> np.ndarray:
    """Values as rows (in `order`) x samples; each row needs every sample, each value finite and not negative."""
    grid = np.full((len(order), samples), np.nan)
    position = {key: k for k, key in enumerate(order)}
    rows = np.fromiter((position[key] for key in keys), dtype=np.int64, count=len(keys))
    if (sample < 0).any():
        raise DemandFileError(f"{path}: a row at a negative time; expected times from 0")
    counts = np.zeros(grid.shape, dtype=np.int64)
    np.add.at(counts, (rows, sample), 1)
    if (counts > 1).any():
        row, at = np.argwhere(counts > 1)[0]
        name = str(order[row]).replace("\0", " -> ")
        raise DemandFileError(f"{path}: {name} has {counts[row, at]} rows at sample {at}; expected one")
    grid[rows, sample] = values
    bad = ~np.isfinite(grid) | (grid < 0)
    if bad.any():
        row, at = np.argwhere(bad)[0]
        name = str(order[row]).replace("\0", " -> ")
        value = "missing or not a number" if np.isnan(grid[row, at]) else f"{grid[row, at]!r}"
        raise DemandFileError(
            f"{path}: {column} of {name} at sample {at} is {value}; expected a finite number, not negative, "
            "at every sample"
        )
    return grid


def check_observed(reader: Reader, where: str, params: dict, vms: list[str]) -> None:
    """An observed entry's file reads, holds the series it names, and has one for each VM its pattern names
    (a VM without one was not observed: it asks for nothing, which is worth a warning)."""
    if not Path(params["file"]).exists():
        return  # already an error
    try:
        demand = read_demand(params["file"])
    except TraceError as exc:
        reader.error(f"{where}.file", str(exc))
        return
    if params.get("series"):
        if not demand.has(params["series"]):
            reader.error(f"{where}.series", f"{params['series']!r} is no series of {params['file']}")
        return
    unseen = [name for name in vms if not demand.has(name)]
    if unseen:
        reader.warn(
            f"{where}.vm",
            f"{', '.join(unseen[:8])}{', ...' if len(unseen) > 8 else ''} have no series in "
            f"{Path(params['file']).name}: not observed, they ask for nothing",
        )
