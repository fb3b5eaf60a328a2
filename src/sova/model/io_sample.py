"""What a fast IO control loop reads and sets, apart from the Snapshot: the block counters of the VMs it
controls, and each VM's IO throttle (requests per second and request-merge limit).

A storage SLO controller runs every 25 ms; building a whole Snapshot that often would cost more than the
control itself, so drivers offer this narrow pair: one read of cumulative block counters, as libvirt's
blockStats and the simulator's sensors count them, and one write of throttles.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class IoSample:
    """Cumulative block IO counters of some VMs at `time` (one entry per VM, in the order asked)."""

    time: float
    requests: np.ndarray  # reads and writes
    bytes: np.ndarray
    busy: np.ndarray  # seconds the VM's requests spent in flight, summed over requests


@dataclass(frozen=True)
class IoThrottle:
    """Throttles to set, one entry per VM: requests per second (0: none) and merge limit (bytes; 0: none);
    optionally the tags of the storage server's scheduler (mClock's reservation in requests per second
    and weight; DRR's quantum as a weight on bytes; without tags the server shares its device as it does
    by default) and a cap on the requests each VM keeps in flight (None: left as they are)."""

    vms: tuple[str, ...]
    iops: np.ndarray
    size: np.ndarray
    reservation: np.ndarray | None = None
    weight: np.ndarray | None = None
    weight_on_bytes: bool = False  # the weights share bytes (DRR's quanta), not requests (mClock's)
    in_flight: np.ndarray | None = None  # requests each VM may keep in flight (Façade's queue length; 0: no cap)

    def without(self, vms: set[str]) -> IoThrottle:
        """The throttles of the other VMs (those named in `vms` left out)."""
        keep = np.array([vm not in vms for vm in self.vms], dtype=bool)
        rows = {name: getattr(self, name) for name in ("iops", "size", "reservation", "weight", "in_flight")}
        kept = {name: None if row is None else row[keep] for name, row in rows.items()}
        return replace(self, vms=tuple(vm for vm, k in zip(self.vms, keep, strict=True) if k), **kept)
