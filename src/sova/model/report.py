"""The host report: what each host's Sensor sends the Autonomic Manager every reporting interval.

Wire format (little-endian, version 1): a 21-byte header, then 13 bytes per VM.

    header: magic 'S' (1) | version (1) | host id u16 | sequence u32 | time s u32 | VMs u8 |
            VFs total u8 | VFs used u8 | host CPU, NIC, memory utilisation u16 each (fixed point, 1/65535)
    per VM: VM id u16 | CPU share of its vCPUs u16 (1/65535) | network Gb/s float16 |
            memory used GiB float16 | IF float16 | NF u16 (1/65535) | NIC u8 (0 vNIC, 1 VF, 2 plugging)

A host with 12 VMs reports in 21 + 12 x 13 = 177 bytes (the paper's Sova sends 224 bytes of host
statistics plus 80 of commands, 304 in all). float16 keeps three significant digits up to 65,504
(network up to 65 Tb/s, memory up to 64 TiB; IF is capped there).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC, VERSION = b"S", 1
_HEADER = struct.Struct("<1sBHIIBBBHHH")
_VM = struct.Struct("<HHeeeHB")
_FIX = 65535.0
F16_MAX = 65504.0
NIC_CODES = {"vnic": 0, "vf": 1, "attaching": 2, "detaching": 2}


class ReportError(ValueError):
    """Bytes that are not a valid host report; the message says what is wrong and where."""


@dataclass(frozen=True)
class VmReport:
    vm: int
    cpu: float  # share of its vCPUs used, 0-1
    net_gbps: float  # sent + received
    mem_gib: float  # in use
    io_factor: float  # IF
    net_factor: float  # NF, 0-1
    nic: int  # 0 vNIC, 1 VF, 2 hot-plug in progress


@dataclass(frozen=True)
class HostReport:
    host: int
    seq: int
    time: int  # seconds on the sensor's clock
    cpu: float  # utilisation 0-1
    nic: float
    mem: float
    vfs_total: int
    vfs_used: int
    vms: tuple[VmReport, ...]


def _fix(x: float) -> int:
    return round(min(max(x, 0.0), 1.0) * _FIX)


def _f16(x: float) -> float:
    return min(max(x, 0.0), F16_MAX)


def encode(r: HostReport) -> bytes:
    if len(r.vms) > 255:
        raise ValueError(f"a host report carries at most 255 VMs, host {r.host} has {len(r.vms)}")
    parts = [
        _HEADER.pack(
            MAGIC,
            VERSION,
            r.host,
            r.seq & 0xFFFFFFFF,
            max(r.time, 0) & 0xFFFFFFFF,
            len(r.vms),
            min(r.vfs_total, 255),
            min(r.vfs_used, 255),
            _fix(r.cpu),
            _fix(r.nic),
            _fix(r.mem),
        )
    ]
    for v in r.vms:
        parts.append(
            _VM.pack(v.vm, _fix(v.cpu), _f16(v.net_gbps), _f16(v.mem_gib), _f16(v.io_factor), _fix(v.net_factor), v.nic)
        )
    return b"".join(parts)


def decode(data: bytes) -> HostReport:
    if len(data) < _HEADER.size:
        raise ReportError(f"host report of {len(data)} bytes is shorter than its {_HEADER.size}-byte header")
    magic, version, host, seq, time, n, vft, vfu, cpu, nic, mem = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise ReportError(f"not a host report: byte 0 is {magic!r}, expected {MAGIC!r}")
    if version != VERSION:
        raise ReportError(f"host report version {version} is not supported (this Sova reads version {VERSION})")
    expected = _HEADER.size + n * _VM.size
    if len(data) != expected:
        raise ReportError(f"host report of host {host} announces {n} VMs ({expected} bytes) but has {len(data)} bytes")
    vms = []
    for i in range(n):
        vm, c, net, memg, io, nf, code = _VM.unpack_from(data, _HEADER.size + i * _VM.size)
        if code > 2:
            raise ReportError(f"host {host} report, VM entry {i}: NIC code {code} is not 0, 1 or 2")
        vms.append(VmReport(vm, c / _FIX, net, memg, io, nf / _FIX, code))
    return HostReport(host, seq, time, cpu / _FIX, nic / _FIX, mem / _FIX, vft, vfu, tuple(vms))
