"""Load measures for migration decisions; the two "volumes" are different things and stay apart.

- ``skewness`` is the Sova paper's Eq. 5 "volume" (Xiao et al., TPDS 2013):
      volume = sqrt( sum_i (r_i / r_bar - 1)^2 )
  r_i the utilisation of resource i by the host (or VM), r_bar the mean utilisation of the m resources
  of the host. ``migration_factor`` is MF = volume / size, size the VM's memory footprint.
- ``sandpiper_volume`` is Sandpiper's (Wood et al., NSDI'07): 1/(1-cpu) * 1/(1-net) * 1/(1-mem), and
  ``volume_to_size`` its VSR = volume / memory size.
"""

from __future__ import annotations

import numpy as np

UTIL_CAP = 0.999  # Sandpiper's volume is infinite at 100 %; cap it so rankings stay finite


def skewness(r: np.ndarray, r_bar: np.ndarray | float | None = None) -> np.ndarray:
    """Eq. 5 over the last axis of r (resources); r_bar defaults to r's own mean (a host's)."""
    r = np.asarray(r, dtype=float)
    mean = r.mean(axis=-1, keepdims=True) if r_bar is None else np.asarray(r_bar, dtype=float)[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(mean > 0, r / mean, 0.0)
    out = np.sqrt(((ratio - 1.0) ** 2).sum(axis=-1))
    return np.where(mean[..., 0] > 0, out, 0.0)


def migration_factor(vm_util: np.ndarray, host_mean: float, size: np.ndarray) -> np.ndarray:
    """MF = volume / size for the VMs of one host; vm_util is VMs x resources (shares of the host)."""
    return skewness(vm_util, np.full(len(vm_util), host_mean)) / np.asarray(size, dtype=float)


def sandpiper_volume(cpu, net, mem) -> np.ndarray:
    c, n, m = (np.minimum(np.asarray(x, dtype=float), UTIL_CAP) for x in (cpu, net, mem))
    return 1.0 / ((1.0 - c) * (1.0 - n) * (1.0 - m))


def volume_to_size(volume, size) -> np.ndarray:
    return np.asarray(volume, dtype=float) / np.asarray(size, dtype=float)
