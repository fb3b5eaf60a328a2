"""Sova's Effector, Algorithm 1 lines 1-9: which VM of a signalled host to migrate.

MF_i = volume_i / size_i with volume from Eq. 5 (the VM's utilisation of each resource relative to
its host's mean utilisation) and size its memory; the VM with the largest MF moves. Eq. 5 is a
skewness: it is large for a VM far from the host's mean in either direction, so a nearly idle VM
scores as high as a heavy one (√3 for a VM that uses nothing). Two guards an operator would expect, and
that the paper's experiments satisfy: the VM carries at least an average share of the resource that
made the host hot (moving a lighter VM cannot relieve it), and it fits in the destination's memory.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sova.analyze.volume import migration_factor
from sova.model.snapshot import Snapshot


def choose_vm(
    snap: Snapshot,
    vm_load: np.ndarray,
    host: int,
    dst: int,
    host_load: np.ndarray,
    exclude: set[str],
    committed: np.ndarray | None = None,
    resident: np.ndarray | None = None,
    accept: Callable[[int], bool] | None = None,
) -> tuple[int, float] | None:
    """(VM index, its MF) to migrate from `host` to `dst`, or None if no VM qualifies. `committed`
    (memory per host) and `resident` (the host's VMs) may be passed by a caller that has them. `accept`:
    a further test of a VM; the largest MF among the VMs it accepts wins."""
    hot_resource = int(np.argmax(host_load))
    if committed is None:
        committed = snap.committed_memory()
    free = snap.host_memory[dst] - committed[dst]
    if resident is None:
        resident = np.flatnonzero(snap.vm_host == host)
    resident = resident[~snap.vm_migrating[resident]]
    if not len(resident):
        return None
    fair = vm_load[resident, hot_resource].sum() / len(resident)
    on = [
        v
        for v in resident
        if snap.vms[v] not in exclude and vm_load[v, hot_resource] >= fair > 0 and snap.memory_held()[v] <= free
    ]
    if not on:
        return None
    idx = np.array(on)
    mf = migration_factor(vm_load[idx], float(host_load.mean()), snap.vm_memory[idx])
    for best in np.argsort(-mf, kind="stable"):
        if accept is None or accept(int(idx[best])):
            return int(idx[best]), float(mf[best])
    return None
