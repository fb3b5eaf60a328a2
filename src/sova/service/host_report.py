"""A host's report on the bus: its part of a Snapshot (the host, its VMs, the flows its VMs send), and the
manager's merge of the latest report of every host back into one Snapshot.

On the wire a report is zlib-compressed: a JSON header (names, and each array's type and length) and the
arrays' bytes. A flow's destination travels by VM name ("" outside the data center), since indices are
per report. Decoding is strict: a report whose header and arrays disagree is refused whole.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import fields, replace

import numpy as np

from sova.model.power_models import POINTS
from sova.model.snapshot import Snapshot, VmCounters

VERSION = 1
_HOST = ("host_cores", "host_memory", "host_cpu_time", "dom0_cpu_time", "dom0_vcpus", "nic_bandwidth")
_HOST += ("nic_rx_bytes", "nic_tx_bytes", "vfs_total", "vfs_used", "dom0_weight", "host_core_mips")
_CURVE = "host_power_curve"  # the host's watts at 0, 10, ..., 100 % CPU: POINTS values
_VM = ("vm_vcpus", "vm_memory", "vm_memory_used", "vm_dirty_rate", "vm_weight", "vm_cap", "vm_vf_rate")
_VM += ("vm_migrating", "vm_disk_local", "vm_mips")
_COUNTERS = tuple(counter_field.name for counter_field in fields(VmCounters))
_DTYPES = {"f8": np.float64, "i8": np.int64, "b1": np.bool_}


class ReportError(ValueError):
    """Bytes that are not a well-formed host report."""


def host_part(snap: Snapshot, host: str) -> Snapshot:
    """The part of `snap` a host reports: the host, the VMs on it, and the flows its VMs send."""
    host_index = snap.hosts.index(host)
    mine = np.flatnonzero(snap.vm_host == host_index)
    index = np.full(len(snap.vms), -1, dtype=np.int64)
    index[mine] = np.arange(len(mine))
    sent = np.flatnonzero(np.isin(snap.flow_src, mine))
    # a destination keeps its global index here; host_report encodes it by name
    parts = {name: _take(getattr(snap, name), [host_index]) for name in _HOST}
    parts |= {name: _take(getattr(snap, name), mine) for name in _VM}
    return replace(
        snap,
        hosts=(host,),
        vms=tuple(snap.vms[vm_index] for vm_index in mine),
        vm_host=np.zeros(len(mine), dtype=np.int64),
        vm_nic=tuple(snap.vm_nic[vm_index] for vm_index in mine),
        counters=VmCounters(**{name: getattr(snap.counters, name)[mine] for name in _COUNTERS}),
        flow_src=index[snap.flow_src[sent]],
        flow_dst=snap.flow_dst[sent],
        flow_bytes=snap.flow_bytes[sent],
        host_power=None if snap.host_power is None else (snap.host_power[host_index],),
        host_power_curve=_take(snap.host_power_curve, [host_index]),
        **parts,
    )


def encode(snap: Snapshot, host: str) -> bytes:
    """The host's report, from a snapshot that holds it (the whole cluster's, or the host's own)."""
    part = host_part(snap, host)
    arrays = {name: getattr(part, name) for name in _HOST + _VM if getattr(part, name) is not None}
    arrays |= {f"counters.{name}": getattr(part.counters, name) for name in _COUNTERS}
    arrays |= {"flow_src": part.flow_src, "flow_bytes": part.flow_bytes}
    if part.host_power_curve is not None:
        arrays[_CURVE] = part.host_power_curve[0]
    destinations = ["" if destination < 0 else snap.vms[destination] for destination in part.flow_dst]
    header = {
        "v": VERSION,
        "time": part.time,
        "host": host,
        "vms": list(part.vms),
        "vm_nic": list(part.vm_nic),
        "flow_dst": destinations,
        "host_power": None if part.host_power is None else part.host_power[0],
        "arrays": {name: [_code(array), len(array)] for name, array in arrays.items()},
    }
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    body = b"".join(np.ascontiguousarray(array, dtype=_DTYPES[_code(array)]).tobytes() for array in arrays.values())
    return zlib.compress(struct.pack("<I", len(head)) + head + body)


def decode(payload: bytes) -> tuple[Snapshot, list[str]]:
    """One host's part of a Snapshot, and its flows' destinations by name."""
    try:
        raw = zlib.decompress(payload)
        (size,) = struct.unpack_from("<I", raw)
        header = json.loads(raw[4 : 4 + size])
    except (zlib.error, struct.error, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ReportError(f"host report: unreadable ({err})") from None
    if not isinstance(header, dict) or header.get("v") != VERSION:
        raise ReportError(f"host report: expected version {VERSION}")
    host, vms = header.get("host"), header.get("vms")
    if not isinstance(host, str) or not isinstance(vms, list) or not all(isinstance(vm, str) for vm in vms):
        raise ReportError("host report: expected a host name and a list of VM names")
    arrays, offset = {}, 4 + size
    for name, (code, length) in header.get("arrays", {}).items():
        dtype = _DTYPES.get(code)
        if dtype is None or not isinstance(length, int) or length < 0:
            raise ReportError(f"host report ({host}): array {name} has no valid type and length")
        end = offset + length * np.dtype(dtype).itemsize
        if end > len(raw):
            raise ReportError(f"host report ({host}): array {name} runs past the end of the report")
        arrays[name] = np.frombuffer(raw[offset:end], dtype=dtype).copy()
        offset = end
    _check_lengths(host, vms, header, arrays)
    counters = VmCounters(**{name: arrays.pop(f"counters.{name}") for name in _COUNTERS})
    part = Snapshot(
        time=float(header["time"]),
        hosts=(host,),
        vms=tuple(vms),
        vm_host=np.zeros(len(vms), dtype=np.int64),
        vm_nic=tuple(header["vm_nic"]),
        counters=counters,
        flow_dst=np.full(len(header["flow_dst"]), -1, dtype=np.int64),
        host_power=None if header.get("host_power") is None else (str(header["host_power"]),),
        host_power_curve=arrays[_CURVE].reshape(1, POINTS) if _CURVE in arrays else None,
        **{name: arrays.get(name) for name in _HOST + _VM + ("flow_src", "flow_bytes")},
    )
    return part, list(header["flow_dst"])


def without_vms(report: tuple[Snapshot, list[str]], gone: set[str]) -> tuple[Snapshot, list[str]]:
    """A host's report without the VMs `gone` (and the flows they send): those a newer report of another
    host holds, as when a failed host's VMs were restarted elsewhere."""
    part, destinations = report
    keep = np.array([vm not in gone for vm in part.vms], dtype=bool)
    if keep.all():
        return report
    mine = np.flatnonzero(keep)
    index = np.full(len(part.vms), -1, dtype=np.int64)
    index[mine] = np.arange(len(mine))
    sent = np.flatnonzero(keep[part.flow_src])
    kept = replace(
        part,
        vms=tuple(part.vms[i] for i in mine),
        vm_host=part.vm_host[mine],
        vm_nic=tuple(part.vm_nic[i] for i in mine),
        counters=VmCounters(**{name: getattr(part.counters, name)[mine] for name in _COUNTERS}),
        flow_src=index[part.flow_src[sent]],
        flow_dst=part.flow_dst[sent],
        flow_bytes=part.flow_bytes[sent],
        **{name: _take(getattr(part, name), mine) for name in _VM},
    )
    return kept, [destinations[i] for i in sent]


def merge(reports: list[tuple[Snapshot, list[str]]]) -> Snapshot:
    """One Snapshot of the hosts whose reports are given, at the latest report's time; a flow to a VM no
    report holds counts as leaving the data center."""
    parts = [part for part, _ in reports]
    vms = tuple(vm for part in parts for vm in part.vms)
    position = {vm: index for index, vm in enumerate(vms)}
    first_vm = np.cumsum([0] + [len(part.vms) for part in parts])

    def joined(name: str) -> np.ndarray | None:
        values = [getattr(part, name) for part in parts]
        return None if any(value is None for value in values) else np.concatenate(values)

    flow_dst = np.concatenate(
        [np.array([position.get(dest, -1) if dest else -1 for dest in dests], dtype=np.int64) for _, dests in reports]
    )
    return Snapshot(
        time=max(part.time for part in parts),
        hosts=tuple(part.hosts[0] for part in parts),
        vms=vms,
        vm_host=np.concatenate(
            [np.full(len(part.vms), host_index, dtype=np.int64) for host_index, part in enumerate(parts)]
        ),
        vm_nic=tuple(nic for part in parts for nic in part.vm_nic),
        counters=VmCounters(
            **{name: np.concatenate([getattr(part.counters, name) for part in parts]) for name in _COUNTERS}
        ),
        flow_src=np.concatenate([part.flow_src + first_vm[host_index] for host_index, part in enumerate(parts)]),
        flow_dst=flow_dst,
        flow_bytes=np.concatenate([part.flow_bytes for part in parts]),
        host_power=None
        if any(part.host_power is None for part in parts)
        else tuple(part.host_power[0] for part in parts),
        **{name: joined(name) for name in (*_HOST, *_VM, _CURVE)},
    )


def _take(values: np.ndarray | None, index) -> np.ndarray | None:
    return None if values is None else values[index]


def _code(values: np.ndarray) -> str:
    if values.dtype == np.bool_:
        return "b1"
    return "i8" if np.issubdtype(values.dtype, np.integer) else "f8"


def _check_lengths(host: str, vms: list, header: dict, arrays: dict) -> None:
    """Every array as long as what it describes; the names' lists as long as the VMs and the flows."""
    n_flows = len(arrays.get("flow_src", ()))
    for name, values in arrays.items():
        want = 1 if name in _HOST else POINTS if name == _CURVE else n_flows if name.startswith("flow_") else len(vms)
        if len(values) != want:
            raise ReportError(f"host report ({host}): {name} has {len(values)} values, expected {want}")
    optional = ("dom0_weight", "vm_disk_local", "host_core_mips", "vm_mips")
    for name in (
        *_COUNTERS,
        *(array_name for array_name in _HOST + _VM if array_name not in optional),
        "flow_src",
        "flow_bytes",
    ):
        key = f"counters.{name}" if name in _COUNTERS else name
        if key not in arrays:
            raise ReportError(f"host report ({host}): {key} is missing")
    if len(header.get("vm_nic", ())) != len(vms) or len(header.get("flow_dst", ())) != n_flows:
        raise ReportError(f"host report ({host}): vm_nic and flow_dst must match its VMs and flows")
    if n_flows and (arrays["flow_src"].min() < 0 or arrays["flow_src"].max() >= len(vms)):
        raise ReportError(f"host report ({host}): a flow's source is not one of its VMs")
