"""The scenario's `[[slos]]`: tenants' storage SLOs (the SASLO paper's Table 1), one entry per VM or glob.

    [[slos]]
    vm = "web"
    throughput = [400, 600]        # IOPS: reservation and limit of the throughput target
    io_size = ["12KB", "32KB"]     # the range of the request-merge limit
    sc_rate = [80, 90]             # per cent
    pf_ratio = [8, 15]             # per cent
    latency = "20ms"               # the mean latency of each second (Façade, in `see`)

Every range is checked as the tenant API checks it (model/storage_slo.py), and each problem is reported
with the entry and key it is in; a pattern that matches no VM is an error.
"""

from __future__ import annotations

from typing import Any

from sova.model import units
from sova.model.name_match import NameMatcher
from sova.model.scenario_fields import SLO_FIELDS
from sova.model.schema import Reader
from sova.model.storage_slo import Ramp, Range, SloBook, SloError, StorageSlo, checked_latency, checked_range

RANGES = ("throughput", "io_size", "sc_rate", "pf_ratio")


def _range(reader: Reader, where: str, vm: str, setting: str, raw: Any) -> Range | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) != 2:
        reader.error(where, f"expected [lower, upper], got {raw!r}")
        return None
    try:
        values = [units.size_bytes(v) for v in raw] if setting == "io_size" else raw
        return checked_range(vm, setting, values[0], values[1])
    except (SloError, ValueError) as exc:
        reader.error(where, str(exc))
        return None


def read_slos(reader: Reader, raw: Any, vm_names: list[str]) -> tuple[tuple[str, StorageSlo], ...]:
    """(VM, its SLO) for every VM an entry names, in entry order (a later entry wins)."""
    matching = NameMatcher(vm_names)
    out: dict[str, StorageSlo] = {}
    named_by: dict[str, str] = {}  # VM: the entry that last set its SLO
    for n, entry in enumerate(reader.entries(raw, "[[slos]]"), start=1):
        where = f"[[slos]] #{n}"
        t = reader.table(entry, SLO_FIELDS, where)
        pattern = t.get("vm")
        if not isinstance(pattern, str):
            continue
        vms = matching(pattern)
        if not vms:
            reader.error(f"{where}.vm", f"{pattern!r} matches no VM of the scenario")
            continue
        ranges = {key: _range(reader, f"{where}.{key}", pattern, key, t[key]) for key in RANGES}
        if ranges["throughput"] is None and t["throughput"] is None:
            reader.error(f"{where}.throughput", "an SLO needs a throughput range, e.g. [400, 600]")
        ramp = None
        if t["ramp_step"] and ranges["throughput"] is not None:
            ramp = Ramp(t["ramp_step"], t["ramp_every"], ranges["throughput"][1], bool(t["ramp_repeat"]))
        latency = None
        if t["latency"]:
            try:
                latency = checked_latency(pattern, t["latency"])
            except SloError as exc:
                reader.error(f"{where}.latency", str(exc))
        slo = StorageSlo(**{k: v for k, v in ranges.items() if v is not None}, ramp=ramp, latency=latency)
        again = [vm for vm in vms if vm in named_by]
        if again:
            more = f" (and {len(again) - 1} more)" if len(again) > 1 else ""
            reader.warn(
                f"{where}.vm",
                f"{pattern!r} gives {again[0]}{more} a second SLO, after {named_by[again[0]]}; this one holds, the "
                "earlier is dropped (one SLO per VM)",
            )
        out.update((vm, slo) for vm in vms)
        named_by.update((vm, f"{where} ({pattern})") for vm in vms)
    return tuple(out.items())


def slo_book(vm_names: list[str], slos: tuple[tuple[str, StorageSlo], ...]) -> SloBook:
    """A tenant API over the scenario's VMs holding its `[[slos]]`."""
    book = SloBook(vm_names)
    for vm, slo in slos:
        book.set_slo(vm, slo)
    return book
