"""Shared storage servers: SSD and disk-array device models with per-VM IO streams.

A device has ``parallelism`` units; an IO of size s occupies one unit for its access time + s/bandwidth,
the access time a random IO's seek (``access_time``) or a sequential stream's next block from read-ahead
(``sequential_access_time``).
Streams share a saturated device max-min fairly in device time (as CFQ/BFQ share disk time), and
latency is the service time plus an M/G/1 queueing delay at the device's utilisation (Pollaczek-Khinchine:
the wait grows with (1 + cv²) / 2, cv the service time's coefficient of variation; cv = 1 is M/M/1). Each
stream waits its own service time times ρ / (1 − ρ): a stream of large requests waits longer, but holds
up the others only through the utilisation it adds, not through its requests' size. A server whose VMs have
scheduler tags (a reservation or a weight) shares its device by them instead (``sim/io_scheduler.py``).
"""

from __future__ import annotations

import numpy as np

from sova.sim.compute import weighted_share
from sova.sim.io_scheduler import tagged_share

RHO_MAX = 0.98


def serve_io(
    server: np.ndarray,
    iops: np.ndarray,
    service: np.ndarray,
    parallelism: np.ndarray,
    cv: np.ndarray | float = 1.0,
    tags: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Served IOPS and mean latency (s) per stream, and utilisation per server; service: the seconds one
    IO of the stream holds a unit of its server (access time and transfer); cv: per stream, its
    server's service-time coefficient of variation; tags: per stream, the scheduler's reservation
    (requests/s) and weight per request (both 0: untagged, weight 1 on a tagged server)."""
    n_servers = len(parallelism)
    if len(server) == 0:
        return np.zeros(0), np.zeros(0), np.zeros(n_servers)
    share = service / parallelism[server]
    # shared in device time: each stream's variable is the fraction of the device it occupies
    wanted = iops * share
    # one resource per stream: max-min fairness is a water-fill per server (equal weights)
    occupied = weighted_share(server, wanted, np.ones(len(server)), np.ones(n_servers))
    if tags is not None:
        reservation, weight = tags
        tagged = (reservation > 0) | (weight > 0)
        on = (np.bincount(server, weights=tagged, minlength=n_servers) > 0)[server]
        weight = np.where(tagged, weight, 1.0)
        served = tagged_share(server[on], iops[on], share[on], reservation[on], weight[on], n_servers)
        occupied[on] = served * share[on]
    served = occupied / share
    rho = np.bincount(server, weights=occupied, minlength=n_servers)
    r = np.minimum(rho, RHO_MAX)[server]
    latency = service + share * r / (1 - r) * (1 + np.square(cv)) / 2
    return served, latency, rho
