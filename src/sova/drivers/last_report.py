"""A host that stopped reporting shows its last report: its counters, and its VMs where it last saw them.

A manager learns of a failure only from a host going silent (``Snapshot.host_seen`` keeps the time of its
last report); meanwhile the policies and the executor see the host as it was, marked old, and ha-restart
knows which VMs to boot elsewhere once it is declared failed.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from sova.model.snapshot import Snapshot, VmCounters

HOST_ROWS = (
    *("host_cores", "host_memory", "host_cpu_time", "dom0_cpu_time", "dom0_vcpus", "dom0_weight"),
    *("nic_rx_bytes", "nic_tx_bytes", "vfs_total", "vfs_used"),
)


def held_for_silent_hosts(snap: Snapshot, heard: Snapshot, silent: np.ndarray) -> Snapshot:
    """`snap` with the silent hosts' counters, and their VMs' (where they were), as last heard: a host in a
    sensor gap shows its last report."""
    c = {k: getattr(snap.counters, k).copy() for k in VmCounters.__dataclass_fields__}
    vm_host = snap.vm_host.copy()
    then = heard.vm_position
    for v, vm in enumerate(snap.vms):
        old = then.get(vm)
        if old is not None and (silent[snap.vm_host[v]] or silent[heard.vm_host[old]]):
            vm_host[v] = heard.vm_host[old]
            for k in c:
                c[k][v] = getattr(heard.counters, k)[old]
    return dataclasses.replace(snap, vm_host=vm_host, counters=VmCounters(**c), **_held_rows(snap, heard, silent))


def with_vms_of_silent_hosts(snap: Snapshot, heard: Snapshot, silent: np.ndarray) -> Snapshot:
    """`snap` with the rows of the silent hosts as last heard, and the VMs `heard` had on them that `snap`
    lacks added after its own (flows are not held: the matrix's indices stay valid)."""
    rows = _held_rows(snap, heard, silent)
    now = set(snap.vms)
    keep = [i for i, vm in enumerate(heard.vms) if vm not in now and silent[heard.vm_host[i]]]
    if not keep:
        return dataclasses.replace(snap, **rows)
    extra: dict = {"vms": snap.vms + tuple(heard.vms[i] for i in keep)}
    for f in dataclasses.fields(Snapshot):
        if f.name.startswith("vm_"):
            mine, theirs = getattr(snap, f.name), getattr(heard, f.name)
            if mine is None or theirs is None:
                extra[f.name] = None
            elif isinstance(mine, tuple):
                extra[f.name] = mine + tuple(theirs[i] for i in keep)
            else:
                extra[f.name] = np.concatenate([mine, np.asarray(theirs)[keep]])
    counters = {
        k: np.concatenate([getattr(snap.counters, k), getattr(heard.counters, k)[keep]])
        for k in VmCounters.__dataclass_fields__
    }
    return dataclasses.replace(snap, counters=VmCounters(**counters), **extra, **rows)


def _held_rows(snap: Snapshot, heard: Snapshot, silent: np.ndarray) -> dict[str, np.ndarray]:
    """The per-host arrays with the silent hosts' entries as last heard."""
    rows = {}
    for name in HOST_ROWS:
        now, then = getattr(snap, name), getattr(heard, name)
        if now is not None and then is not None:
            rows[name] = np.where(silent, then, now)
    return rows
