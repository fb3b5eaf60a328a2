"""Shared storage servers: SSD and disk-array device models with per-VM IO streams.

A device has ``parallelism`` units; an IO of size s occupies one unit for access_time + s/bandwidth.
Streams share a saturated device max-min fairly in device time (as CFQ/BFQ share disk time), and
latency is the service time plus an M/M/1 queueing delay at the device's utilisation.
"""

from __future__ import annotations

import numpy as np

from sova.sim.compute import weighted_share

RHO_MAX = 0.98


def serve_io(
    server: np.ndarray,
    iops: np.ndarray,
    size: np.ndarray,
    parallelism: np.ndarray,
    access_time: np.ndarray,
    bandwidth_bytes: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Served IOPS and mean latency (s) per stream, and utilisation per server."""
    n_servers = len(parallelism)
    if len(server) == 0:
        return np.zeros(0), np.zeros(0), np.zeros(n_servers)
    service = access_time[server] + size / bandwidth_bytes[server]
    share = service / parallelism[server]
    # shared in device time: each stream's variable is the fraction of the device it occupies
    wanted = iops * share
    # one resource per stream: max-min fairness is a water-fill per server (equal weights)
    occupied = weighted_share(server, wanted, np.ones(len(server)), np.ones(n_servers))
    served = occupied / share
    rho = np.bincount(server, weights=occupied, minlength=n_servers)
    r = np.minimum(rho, RHO_MAX)[server]
    latency = service + share * r / (1 - r)
    return served, latency, rho
