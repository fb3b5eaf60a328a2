"""Shared storage servers: SSD and disk-array device models with per-VM IO streams.

A device has ``parallelism`` units; an IO of size s occupies one unit for its access time + s/bandwidth,
the access time a random IO's seek (``access_time``) or a sequential stream's next block from read-ahead
(``sequential_access_time``). The pieces of a split IO after its first follow it as a sequential stream
does, and on a striped array (``stripe``) a random IO busies each disk it spans (``piece_access``).
Streams share a saturated device max-min fairly in device time (as CFQ/BFQ share disk time), and
latency is the service time plus the M/G/1 queueing delay of one queue all the server's requests join
(Pollaczek-Khinchine for a mix of request classes): every request waits ρ / (1 − ρ) times the mean residual
service of the mix, E[S²] / 2 E[S], each class's second moment S²(1 + cv²), cv the server's service-time
coefficient of variation (cv = 1 is M/M/1). So a stream of large requests holds up the others' small ones
by its requests' size, not only by the utilisation it adds. The device's ``parallelism`` units act as
one server that many times faster, so a single stream waits its service time over the units times
ρ / (1 − ρ) (1 + cv²) / 2. A closed loop is served at most its depth over its request's time
(``closed_loop_bound``). A server whose VMs have scheduler tags (a reservation or a weight) shares its device by them
instead (``sim/io_scheduler.py``); a request in service is not pre-empted, so they wait as in one queue.
"""

from __future__ import annotations

import numpy as np

from sova.sim.compute import weighted_share
from sova.sim.io_scheduler import tagged_share

RHO_MAX = 0.98
PAGE = 4096.0  # a request starts on a page: the guest's block layer issues whole pages


def piece_access(
    access: np.ndarray,
    sequential_access: np.ndarray,
    io_size: np.ndarray,
    split: np.ndarray,
    stripe: np.ndarray,
    units: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per request of a random IO of `io_size` bytes split into `split` pieces: the access time it waits
    (in its latency) and the access time it busies the device for, on average over the IO's pieces.

    The pieces of one IO are adjacent (the block layer splits it at the merge limit and dispatches them
    in order), so only the first on each disk seeks; the others follow it as a sequential stream's
    requests do (`sequential_access`). On a RAID 0 of `stripe`-byte units (0: none), an IO at a random
    page spans 1 + (size - page) / stripe units on average (at most `units` disks), each a disk that
    seeks for it: the disks seek at once, so its wait is one access and its device time one per disk."""
    spans = np.where(stripe > 0, np.minimum(1 + np.maximum(io_size - PAGE, 0.0) / np.maximum(stripe, 1.0), units), 1.0)
    following = np.maximum(split - spans, 0.0) * sequential_access
    return (np.minimum(spans, split) * access + following) / split, (spans * access + following) / split


def share_device(
    server: np.ndarray,
    iops: np.ndarray,
    share: np.ndarray,
    n_servers: int,
    tags: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Served IOPS per stream; share: a request's time on the whole device (its unit's time over the
    server's units): max-min fair in device time, or by the scheduler's tags on a server that has any."""
    if len(server) == 0:
        return np.zeros(0)
    # shared in device time: each stream's variable is the fraction of the device it occupies
    wanted = iops * share
    # one resource per stream: max-min fairness is a water-fill per server (equal weights)
    occupied = weighted_share(server, wanted, np.ones(len(server)), np.ones(n_servers))
    served = occupied / share
    if tags is not None:
        reservation, weight = tags
        tagged = (reservation > 0) | (weight > 0)
        on = (np.bincount(server, weights=tagged, minlength=n_servers) > 0)[server]
        weight = np.where(tagged, weight, 1.0)
        served[on] = tagged_share(server[on], iops[on], share[on], reservation[on], weight[on], n_servers)
    return served


def queueing(
    server: np.ndarray, rate: np.ndarray, share: np.ndarray, residual: np.ndarray, n_servers: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per server, the utilisation and the wait of a request in its one queue: ρ / (1 − ρ) times the mean
    residual service of the mix, E[S²] / 2 E[S] with each stream weighted by its `rate` of requests.
    share: a request's time on the whole device; residual: its own E[S²] / 2 E[S], share (1 + cv²) / 2."""
    occupied = rate * share
    rho = np.bincount(server, weights=occupied, minlength=n_servers)
    return rho, _wait(rho, np.bincount(server, weights=occupied * residual, minlength=n_servers))


def _wait(rho: np.ndarray, second: np.ndarray) -> np.ndarray:
    """ρ / (1 − ρ) (ρ capped below 1) times the mean residual: `second` is Σ rate · share · residual."""
    capped = np.minimum(rho, RHO_MAX)
    return np.where(rho > 1e-12, capped / (1 - capped) * second / np.maximum(rho, 1e-300), 0.0)


def others_wait(
    server: np.ndarray, rate: np.ndarray, share: np.ndarray, residual: np.ndarray, n_servers: int
) -> np.ndarray:
    """Per stream, what a request waits behind the other streams' requests of its server (as `queueing`,
    without the stream's own)."""
    occupied = rate * share
    weighted = occupied * residual
    others = np.bincount(server, weights=occupied, minlength=n_servers)[server] - occupied
    return _wait(others, np.bincount(server, weights=weighted, minlength=n_servers)[server] - weighted)


def closed_loop_bound(
    server: np.ndarray,
    served: np.ndarray,
    share: np.ndarray,
    residual: np.ndarray,
    closed: np.ndarray,
    depth: np.ndarray,
    alone: np.ndarray,
    n_servers: int,
) -> tuple[np.ndarray, np.ndarray]:
    """What each closed stream is served when it keeps at most `depth` requests outstanding, and one
    request's time: its own time (`alone`: service and host path) plus the wait behind the other streams'
    requests (`others_wait`; their large requests hold it up more). A closed stream does not wait behind
    its own requests here: when the bound holds it back its whole depth is outstanding, and the caller
    takes its latency as depth / served (Little's law). `served`: what the device's sharing gives each
    stream; the others' load is solved with it as a fixed point (a few damped steps), as a saturated
    device serves its capacity only if its streams' depths fill it."""
    rate = served
    for step in range(12):
        time = alone + others_wait(server, rate, share, residual, n_servers)
        bounded = np.where(closed, np.minimum(served, depth / time), served)
        if np.allclose(bounded, rate, rtol=1e-4, atol=1e-9):
            break
        rate = bounded if step == 0 else (rate + bounded) / 2
    # settled, or the last bound, within its depth over the time it was taken at
    return bounded, time
