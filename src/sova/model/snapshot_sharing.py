"""A new snapshot whose columns equal the previous snapshot's holds the previous ones instead, so that the
Knowledge keeps each unchanged column once across its history.

Most of a snapshot does not change from one observation to the next: the VMs' names, hosts, sizes,
weights and caps, the flows' ends, the hosts' capacities. At 100,000 VMs a snapshot is some 26 MB and
about half of it is such columns; the Knowledge keeps 600 one-second snapshots by default. A shared
column is made read-only, so that code writing into a snapshot's array, which would now change the
history too, fails at once instead.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from sova.model.snapshot import Snapshot

_POSITIONS = ("vm_position", "host_position")  # cached lookups that follow the names


def share_unchanged(new: Snapshot, previous: Snapshot) -> Snapshot:
    """`new`, with each column equal to `previous`'s replaced by `previous`'s (read-only)."""
    shared = _shared_fields(new, previous, exclude={"time", "counters"})
    counters = _shared_fields(new.counters, previous.counters, exclude=set())
    if counters:
        shared["counters"] = dataclasses.replace(new.counters, **counters)
    if not shared:
        return new
    out = dataclasses.replace(new, **shared)
    for name, names in zip(_POSITIONS, ("vms", "hosts"), strict=True):
        if name in previous.__dict__ and getattr(out, names) is getattr(previous, names):
            out.__dict__[name] = previous.__dict__[name]  # the same names: the same lookup
    return out


def _shared_fields(new: Any, previous: Any, exclude: set[str]) -> dict[str, Any]:
    shared = {}
    for field in dataclasses.fields(new):
        if field.name in exclude:
            continue
        now, before = getattr(new, field.name), getattr(previous, field.name)
        if now is before or not _equal(now, before):
            continue
        if isinstance(before, np.ndarray):
            before.flags.writeable = False
        shared[field.name] = before
    return shared


def _equal(now: Any, before: Any) -> bool:
    if isinstance(now, np.ndarray):  # a counter that moved differs in its first values: found at once
        return (
            isinstance(before, np.ndarray)
            and now.shape == before.shape
            and now.dtype == before.dtype
            and (now.size == 0 or (now.flat[0] == before.flat[0] and bool((now == before).all())))
        )
    return isinstance(now, tuple) and isinstance(before, tuple) and now == before
