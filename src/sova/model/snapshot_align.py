"""An older snapshot re-indexed like a newer one, so that counters can be differenced across a change of
inventory (a VM created or deleted, a host whose daemon was away).

VMs and hosts are matched by name, flows by their (source VM, destination VM) names (the k-th flow of a
pair with the k-th). What the older snapshot does not have takes the newer one's value: over that window
it counts as having done nothing, which is what can honestly be said of a VM that was not there yet.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from sova.model.snapshot import Snapshot, VmCounters

_VM_FIELDS = ("vm_vcpus", "vm_memory", "vm_memory_used", "vm_dirty_rate", "vm_weight", "vm_cap", "vm_vf_rate")
_VM_FIELDS_OBJECT = ("vm_nic", "vm_migrating")
_HOST_FIELDS = (
    "host_cores",
    "host_memory",
    "host_cpu_time",
    "dom0_cpu_time",
    "dom0_vcpus",
    "nic_bandwidth",
    "nic_rx_bytes",
    "nic_tx_bytes",
    "vfs_total",
    "vfs_used",
)


def aligned(old: Snapshot, new: Snapshot, between: Iterable[Snapshot] = ()) -> Snapshot:
    """`old` with the VMs, hosts and flows of `new`, in its order (itself when nothing changed). A VM
    that `old` does not have takes its counters from the first of `between` (the snapshots after `old`,
    oldest first) that has it: over the window it counts as idle until it came."""
    if _same_layout(old, new):
        return old
    vm_at = np.array([old.vm_position.get(name, -1) for name in new.vms], dtype=np.int64)
    host_at = np.array([old.host_position.get(name, -1) for name in new.hosts], dtype=np.int64)
    changes: dict = {"vms": new.vms, "hosts": new.hosts}
    for name in _HOST_FIELDS:
        changes[name] = _pick(getattr(old, name), getattr(new, name), host_at)
    changes["dom0_weight"] = _pick_reported(old.dom0_weight, new.dom0_weight, host_at)
    for name in _VM_FIELDS:
        changes[name] = _pick(getattr(old, name), getattr(new, name), vm_at)
    changes["vm_disk_local"] = _pick_reported(old.vm_disk_local, new.vm_disk_local, vm_at)
    changes["vm_memory_held"] = _pick_reported(old.vm_memory_held, new.vm_memory_held, vm_at)
    changes["vm_mips"] = _pick_reported(old.vm_mips, new.vm_mips, vm_at)
    for name in ("host_power", "host_power_curve", "host_core_mips"):  # states and configuration, not counts
        changes[name] = getattr(new, name)
    for name in _VM_FIELDS_OBJECT:
        picked = _pick(
            np.asarray(getattr(old, name), dtype=object), np.asarray(getattr(new, name), dtype=object), vm_at
        )
        changes[name] = tuple(picked) if isinstance(getattr(new, name), tuple) else picked.astype(bool)
    changes["vm_host"] = _old_hosts_in_new_order(old, new, vm_at)
    counters = {
        f.name: _pick(getattr(old.counters, f.name), getattr(new.counters, f.name), vm_at)
        for f in dataclasses.fields(VmCounters)
    }
    for v, (snap, at) in _first_seen(new, vm_at, between).items():
        for name, values in counters.items():
            values[v] = getattr(snap.counters, name)[at]
    changes["counters"] = VmCounters(**counters)
    changes["flow_bytes"] = _old_flow_bytes(old, new)
    changes["flow_src"], changes["flow_dst"] = new.flow_src, new.flow_dst
    return dataclasses.replace(old, **changes)


def _pick_reported(old: np.ndarray | None, new: np.ndarray | None, at: np.ndarray) -> np.ndarray | None:
    """A field a driver may not report (None): picked as any other where both snapshots have it."""
    return new if old is None or new is None else _pick(old, new, at)


def _same_layout(old: Snapshot, new: Snapshot) -> bool:
    """Both index VMs, hosts and flows alike: counters can be differenced as they are."""
    return old.vms == new.vms and old.hosts == new.hosts and len(old.flow_bytes) == len(new.flow_bytes)


def _first_seen(new: Snapshot, vm_at: np.ndarray, between) -> dict[int, tuple[Snapshot, int]]:
    """For each VM of `new` that the old snapshot lacks: the first snapshot of `between` that has it."""
    missing = {new.vms[v]: v for v in np.flatnonzero(vm_at < 0)}
    found: dict[int, tuple[Snapshot, int]] = {}
    for snap in between:
        for name in [n for n in missing if n in snap.vm_position]:
            found[missing.pop(name)] = (snap, snap.vm_position[name])
        if not missing:
            break
    return found


def _pick(old_values: np.ndarray, new_values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """new's array with old's value wherever old has the entry (`at` >= 0)."""
    out = np.array(new_values, copy=True)
    known = at >= 0
    out[known] = np.asarray(old_values)[at[known]]
    return out


def _old_hosts_in_new_order(old: Snapshot, new: Snapshot, vm_at: np.ndarray) -> np.ndarray:
    host_name = [old.hosts[h] for h in old.vm_host]
    out = new.vm_host.copy()
    for v, o in enumerate(vm_at):
        if o >= 0 and host_name[o] in new.host_position:
            out[v] = new.host_position[host_name[o]]
    return out


def _old_flow_bytes(old: Snapshot, new: Snapshot) -> np.ndarray:
    """Per flow of `new`, the bytes the same flow had counted in `old` (new's own where it is new)."""

    def names(snap: Snapshot, vm: int) -> str:
        return snap.vms[vm] if vm >= 0 else ""

    seen: dict[tuple[str, str], list[int]] = defaultdict(list)
    for f, (src, dst) in enumerate(zip(old.flow_src, old.flow_dst, strict=True)):
        seen[(names(old, src), names(old, dst))].append(f)
    out = np.array(new.flow_bytes, dtype=float, copy=True)
    taken: dict[tuple[str, str], int] = defaultdict(int)
    for f, (src, dst) in enumerate(zip(new.flow_src, new.flow_dst, strict=True)):
        pair = (names(new, src), names(new, dst))
        k = taken[pair]
        if k < len(seen[pair]):
            out[f] = old.flow_bytes[seen[pair][k]]
        taken[pair] = k + 1
    return out
