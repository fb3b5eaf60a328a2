"""The storage subsystem on its own clock: per-VM IO queues, per-VM rate limiters and the storage
servers, stepped every epoch (the scenario's step by default; 25 ms for SASLO's enforcement epochs).

Each epoch, per IO stream (a VM's fio or trace IO against its storage server):
- an open-loop stream (``iodepth`` 0) offers its rate for the epoch and its queue: what the limiter or
  the device does not take waits in its VM's queue for the next epochs, up to ``OPEN_QUEUE`` requests
  (beyond that the workload's IOs are not issued, as an application blocks on a full queue); a queued
  request's latency includes its wait there (the queue over what is served, Little's law);
- a closed-loop stream keeps at most ``iodepth`` IOs outstanding, as fio does: it offers its rate, but
  no more than its depth can push through the device at the device's latency (Little's law); when the
  limiter or the device holds it back, its whole depth is outstanding, an IO takes depth / served, and
  the part of that beyond the device's own latency is spent queued (``queue``: IOs waiting, per stream);
- a VM's request-merge limit (``SetIoSize``, bytes) splits each IO larger than it into the fewest equal
  requests within it (as the block layer's max segments per request do), so the device, the limiter
  and the counters see more, smaller requests, adjacent on the disk: only an IO's first piece seeks
  (``storage.piece_access``); a closed stream keeps all the pieces of its IOs
  outstanding. Below the limit, a sequential stream's IOs that are queued together are merged into
  requests of up to the limit (as the block layer merges adjacent requests), as many at a time as the
  stream keeps queued (its depth, or its rate times its service); without a limit nothing is merged;
- a VM's in-flight cap (Façade's queue length, set by a latency controller) bounds the requests its
  streams keep in flight at once, shared among them in proportion to what each would keep: a closed
  stream's depth is at most its share (its other requests wait in the guest, unseen, as behind a full
  virtio ring), and an open stream becomes a closed one of its share (what that cannot carry is not
  issued, as what an open stream's limiter does not take);
- a VM's rate limiter (``SetIoLimit``, IOPS) lets at most its limit of requests through in each epoch,
  and with QEMU's throttle (``io_limiter = "qemu"``, the default) what its bucket saved while the VM
  passed less (up to a tenth of a second of the limit, refilled by each write of a new limit); SASLO's
  time-stamp limiter saves nothing (``sim/io_throttle.py``); shared by the VM's streams in proportion
  to what they offer;
- on Xen hosts the host's path adds Dom0's blkback work and the grant table (``sim/blkback.py``): a
  request costs Dom0 CPU and waits while a full table is refilled; the host's IO is bounded by the Dom0
  CPU its network work leaves;
- the device serves what passed (``storage.share_device``: shared in device time, or by the tags of its
  scheduler where a controller set them, ``sim/io_scheduler.py``; M/G/1 latency with the server's
  ``service_cv``), at its speed of the epoch (``sim/device_variability.py``: a server with
  ``variability`` speeds up and slows down over time). A stream the device holds back (it serves less
  than passed the limiter) completes a random number of requests around that mean, the renewal count
  of requests with that service-time variation; a stream paced by its own rate or its limiter completes
  at that pace.

Each epoch is a steady state of its own (mean-value analysis) around which its completions vary: what
carries from one epoch to the next is what changed between them, a limit a controller set, the device's
speed, or the rates the workloads state at each fabric step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from sova.model.io_sample import IoThrottle
from sova.model.scenario import StorageSpec
from sova.sim.blkback import BlkbackParams, dom0_share, grant_wait
from sova.sim.device_variability import CapacityProcess, completions
from sova.sim.io_throttle import RateLimiters
from sova.sim.storage import RHO_MAX, closed_loop_bound, others_wait, piece_access, queueing, share_device
from sova.sim.workload_kinds.base import IOStreams

_STREAM_FIELDS = ("vm", "iops", "size", "read", "depth", "sequential")
OPEN_QUEUE = 256  # requests an open stream keeps queued at most: QEMU's virtio-blk queue size (its default)


@dataclass(frozen=True)
class EpochServed:
    """What one epoch served, per stream: requests per second over the epoch, their size (bytes) and mean
    latency (s); per server: use; per host: the Dom0 CPU (cores) its blkback used."""

    iops: np.ndarray
    size: np.ndarray
    latency: np.ndarray
    utilisation: np.ndarray
    dom0_cpu: np.ndarray


@dataclass(frozen=True)
class VmIoControls:
    """What controllers set on each VM's storage IO (one entry per VM; 0: none): the rate limit (IOPS,
    ``SetIoLimit``), the request-merge limit (bytes, ``SetIoSize``), the storage scheduler's tags (rows:
    reservation in requests/s, weight, whether the weight is on bytes; all 0: untagged) and the cap on
    requests in flight. Changed in place, by the storage subsystem's commands (``StorageIo.set_limit``,
    ``set_size``, ``set_throttle``)."""

    limit: np.ndarray
    size_limit: np.ndarray
    tags: np.ndarray
    in_flight: np.ndarray

    @classmethod
    def none(cls, n_vms: int) -> VmIoControls:
        return cls(np.zeros(n_vms), np.zeros(n_vms), np.zeros((3, n_vms)), np.zeros(n_vms))

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The controls' arrays: an epoch whose controls, streams and device are those of the last holds."""
        return (self.limit, self.size_limit, self.tags, self.in_flight)

    def set_throttle(self, vms: np.ndarray, throttle: IoThrottle) -> None:
        """An IO controller's throttles on the VMs of those rows: rate and merge limits, and the scheduler's
        tags and the cap on requests in flight where it sets them."""
        self.limit[vms] = throttle.iops
        self.size_limit[vms] = throttle.size
        if throttle.reservation is not None or throttle.weight is not None:  # rows: reservation, weight, on bytes
            self.tags[0, vms] = 0.0 if throttle.reservation is None else throttle.reservation
            self.tags[1, vms] = 0.0 if throttle.weight is None else throttle.weight
            self.tags[2, vms] = float(throttle.weight_on_bytes)
        if throttle.in_flight is not None:
            self.in_flight[vms] = throttle.in_flight


@dataclass(frozen=True)
class _Offer:
    """Per stream, in requests (an IO split by its merge limit is several): their size, rate and depth,
    whether the stream is a closed loop, the device's service time, a request's share of the whole device
    (its device time over the units: a striped request busies several) and mean residual service (share (1 + cv²) / 2), the service time's CV,
    blkback's CPU per request, the host path's time, what the stream offers its limiter, a request's
    time on an idle device (service and path) and at most (behind the largest requests at the highest
    utilisation), and an open stream's rate (0 for a closed one)."""

    size: np.ndarray
    iops: np.ndarray
    depth: np.ndarray
    closed: np.ndarray
    service: np.ndarray
    share: np.ndarray
    residual: np.ndarray
    cv: np.ndarray
    cpu_per_request: np.ndarray
    path: np.ndarray
    offered: np.ndarray
    alone: np.ndarray
    longest: np.ndarray
    open_iops: np.ndarray
    any_open: bool


@dataclass(frozen=True)
class _Steady:
    """An epoch's steady state with what the epoch's completions are drawn around: per stream, its requests
    kept outstanding, whether all of them were (its latency is then depth / served), the requests waiting
    behind its limiter or the device when the epoch ends (an open stream's queue carries over), blkback's
    CPU per request, and the service-time CV of the streams the device paces (0 for the others)."""

    served: EpochServed
    depth: np.ndarray
    full: np.ndarray
    queue: np.ndarray
    cpu_per_request: np.ndarray
    paced_cv: np.ndarray


class StorageEpochs:
    def __init__(
        self,
        n_vms: int,
        servers: Sequence[StorageSpec],
        host_xen: np.ndarray,
        blkback: BlkbackParams,
        rng: np.random.Generator,
        noise: bool = True,
        limiter: str = "qemu",
    ):
        self.n_vms = n_vms
        self.limiters = RateLimiters(n_vms, limiter)

        def per_server(name: str) -> np.ndarray:
            return np.array([getattr(s, name) for s in servers], dtype=float)

        self.parallelism, self.access_time = per_server("parallelism"), per_server("access_time")
        self.write_access_time = per_server("write_access_time")
        self.sequential_access_time = per_server("sequential_access_time")
        self.bandwidth = per_server("bandwidth") / 8  # bytes/s
        self.write_bandwidth = per_server("write_bandwidth") / 8
        self.service_cv = per_server("service_cv")
        self.stripe = per_server("stripe")
        self.striped = bool(self.stripe.any())
        self.speed = CapacityProcess(per_server("variability"), per_server("variability_time"), rng)
        self.rng = rng
        self.noise = noise
        self.host_xen, self.blkback = host_xen, blkback
        self.streams: IOStreams | None = None
        self.server = np.zeros(0, dtype=np.int64)
        self.host = np.zeros(0, dtype=np.int64)
        self.queue = np.zeros(0)  # IOs waiting (queued behind the limiter or the device), per stream
        self._last: tuple[bytes, _Steady] | None = None  # an epoch is a steady state: same inputs, same result
        self._offered: tuple[bytes, _Offer] | None = None  # what the streams offer, kept while its inputs hold

    def offer(self, streams: IOStreams, server: np.ndarray, host: np.ndarray) -> None:
        """The streams of the coming fabric step (their rates change at its pace); queues carry over."""
        old = self.streams
        if old is None or len(old.vm) != len(streams.vm):
            self.queue = np.zeros(len(streams.vm))
        elif (
            np.array_equal(self.server, server)
            and np.array_equal(self.host, host)
            and all(np.array_equal(getattr(old, f), getattr(streams, f)) for f in _STREAM_FIELDS)
        ):
            return  # the same streams as the last step (a constant fio): the last epoch still holds
        self.streams, self.server, self.host = streams, server, host
        self._last = self._offered = None

    def epoch(self, controls: VmIoControls, dom0_free: np.ndarray, length: float) -> EpochServed:
        """Serve one epoch of `length` seconds under the VMs' IO controls; dom0_free: Dom0 cores per host
        left for blkback. Rates are per second: the length sets how many requests an epoch completes, so
        how much that count varies, and how fast a queue drains."""
        speed = self.speed.advance(length)
        offer = self._offer(controls.size_limit, controls.in_flight, speed, len(dom0_free))
        # an open stream's queue from the last epochs (None: every stream is a closed loop)
        backlog = np.where(offer.closed, 0.0, self.queue) if offer.any_open else None
        allowance = self.limiters.allowance(controls.limit, length)
        steady = self._steady(controls, allowance, dom0_free, speed, offer, backlog, length)
        self.queue = steady.queue
        mean = steady.served
        if not (self.noise and steady.paced_cv.any()):
            self._account(controls.limit, mean.iops, length)
            return mean
        served = completions(mean.iops, length, steady.paced_cv, self.rng)
        self._account(controls.limit, served, length)
        # a closed stream with its whole depth outstanding: an IO took depth / served (Little's law)
        latency = np.where(steady.full, steady.depth / np.maximum(served, 1e-300), mean.latency)
        dom0_cpu = np.bincount(self.host, weights=served * steady.cpu_per_request, minlength=len(dom0_free))
        return replace(mean, iops=served, latency=latency, dom0_cpu=dom0_cpu)

    def _account(self, limit: np.ndarray, served: np.ndarray, length: float) -> None:
        """The limiters' buckets after an epoch whose streams completed `served` requests/s."""
        if self.limiters.bursts and (limit > 0).any():
            self.limiters.account(limit, np.bincount(self.streams.vm, weights=served, minlength=self.n_vms), length)

    def _steady(
        self,
        controls: VmIoControls,
        allowance: np.ndarray,
        dom0_free: np.ndarray,
        speed: np.ndarray,
        offer: _Offer,
        backlog: np.ndarray | None,
        length: float,
    ) -> _Steady:
        """The epoch's steady state: what each stream is served on average, and at what latency."""
        inputs = (
            [*controls.arrays(), dom0_free, np.float64(length)]
            + ([allowance] if self.limiters.bursts else [])
            + ([speed] if self.speed.active else [])
        )
        offered = offer.offered
        if backlog is not None and backlog.any():
            inputs.append(backlog)
            offered = offered + backlog / length
        key = b"".join(a.tobytes() for a in inputs)  # one copy of every input
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        host, srv, n_servers = self.host, self.server, len(self.parallelism)
        size, depth, closed, service, share = offer.size, offer.depth, offer.closed, offer.service, offer.share
        cpu_per_request, path = offer.cpu_per_request, offer.path
        passed = self._limit(offered, allowance)
        passed = passed * dom0_share(host, passed, cpu_per_request, dom0_free)
        served = share_device(srv, passed, share, n_servers, self._tags(controls.tags, passed, size))
        # a closed stream keeps at most its depth outstanding, so it is served at most its depth over one
        # request's time (its own time and the wait behind the other streams' requests); held back (by its
        # limiter, its share or that bound), its whole depth is outstanding and an IO takes depth / served
        # (Little's law), the part beyond its own time spent queued. What a closed stream cannot use of its
        # share is not handed to the others in this epoch (a mean-value model). An open stream's requests
        # wait in the device's one queue behind everyone's (M/G/1 with the mix's residual service).
        residual, alone = offer.residual, offer.alone
        # no wait is longer than at the highest utilisation behind the largest requests: a closed stream
        # whose depth carries what it was given even then cannot be held back by its depth
        if (closed & (depth < served * offer.longest)).any():
            served, alone = closed_loop_bound(srv, served, share, residual, closed, depth, alone, n_servers)
        full = closed & (served < offer.iops * (1 - 1e-9))
        if alone is offer.alone and (closed & ~full).any():  # their latency is their own time and that wait
            alone = alone + others_wait(srv, served, share, residual, n_servers)
        rho, wait = queueing(srv, served, share, residual, n_servers)
        latency = service + path + wait[srv]
        # the device, not the workload's own pace or a limiter, sets when these streams' requests complete
        paced_cv = np.where(served < passed * (1 - 1e-9), offer.cv, 0.0)
        held = np.where(full, depth / np.maximum(served, 1e-300), np.where(closed, alone, latency))
        queue = np.where(full, np.maximum(depth - served * (service + path), 0.0), 0.0)
        if backlog is not None and (backlog.any() or (served < offer.open_iops * (1 - 1e-9)).any()):
            # what an open stream was not served joins its queue (its completions vary around this steady
            # state, which is what carries over); a served request waited half the queue's way
            queued = np.clip(backlog + (offer.open_iops - served) * length, 0.0, OPEN_QUEUE)
            held = held + np.where(served > 0, (backlog + queued) / 2 / np.maximum(served, 1e-300), 0.0)
            queue = np.where(closed, queue, queued)
        dom0_cpu = np.bincount(host, weights=served * cpu_per_request, minlength=len(dom0_free))
        served = EpochServed(served, size, held, rho, dom0_cpu)
        steady = _Steady(served, depth, full, queue, cpu_per_request, paced_cv)
        self._last = (key, steady)
        return steady

    def _offer(self, size_limit: np.ndarray, in_flight: np.ndarray, speed: np.ndarray, n_hosts: int) -> _Offer:
        """What the streams offer their limiters, in requests, before any rate limit: it changes with the
        streams, the merge limits, the in-flight caps and the device's speed, not with the rate limits a
        controller moves every epoch, so it is kept while those inputs hold."""
        key = size_limit.tobytes() + in_flight.tobytes() + (speed.tobytes() if self.speed.active else b"")
        if self._offered is not None and self._offered[0] == key:
            return self._offered[1]
        io, host, bb, srv = self.streams, self.host, self.blkback, self.server
        random_access = io.read * self.access_time[srv] + (1 - io.read) * self.write_access_time[srv]
        random_access, sequential_access = random_access / speed[srv], self.sequential_access_time[srv] / speed[srv]
        access = np.where(io.sequential, sequential_access, random_access)
        per_byte = (io.read / self.bandwidth[srv] + (1 - io.read) / self.write_bandwidth[srv]) / speed[srv]
        # in requests from here on (pieces: requests per IO): above its VM's merge limit an IO is split into
        # that many requests; below it, a sequential stream's IOs queued together are merged, up to the limit
        merge = size_limit[io.vm]
        limited = merge > 0
        split = np.where(limited & (io.size > merge), np.ceil(io.size / np.maximum(merge, 1.0)), 1.0)
        queued = np.where(io.depth > 0, io.depth, io.iops * (access + io.size * per_byte))
        fits = np.floor(merge / io.size)
        merged = np.where(
            limited & io.sequential & (fits >= 2), np.maximum(np.minimum(fits, np.floor(queued)), 1.0), 1.0
        )
        pieces = split / merged
        size, iops, depth = io.size / pieces, io.iops * pieces, io.depth * pieces
        service = access + size * per_byte
        occupied = service  # device time of a request
        if self.striped or (split > 1).any():
            # a random IO's pieces after the first follow it on the disk; a striped IO busies each disk it spans
            stripe, units = self.stripe[srv], self.parallelism[srv]
            waited, busy = piece_access(random_access, sequential_access, io.size, split, stripe, units)
            service = np.where(io.sequential, access, waited) + size * per_byte
            occupied = np.where(io.sequential, access, busy) + size * per_byte
        depth, closed = self._cap_in_flight(in_flight, np.where(io.depth > 0, depth, iops * service), io.depth > 0)
        # Xen's host path: blkback's work per request, and the wait for a full grant table
        xen = self.host_xen[host]
        cpu_per_request = np.where(xen, bb.cpu_per_request(size), 0.0)
        outstanding = np.where(closed, depth, iops * service) * xen
        path = cpu_per_request + grant_wait(host, outstanding, size, n_hosts, bb)
        # a closed loop cannot push more than its depth through an idle device; the device shares the rest
        offered = np.where(closed, np.minimum(iops, depth / (service + path)), iops)
        cv = self.service_cv[srv]
        share = occupied / self.parallelism[srv]
        residual = share * (1 + np.square(cv)) / 2
        open_iops, alone = np.where(closed, 0.0, iops), service + path
        longest = alone + RHO_MAX / (1 - RHO_MAX) * (residual.max() if len(residual) else 0.0)
        fields = (size, iops, depth, closed, service, share, residual, cv, cpu_per_request, path, offered, alone)
        offer = _Offer(*fields, longest, open_iops, bool(open_iops.any()))
        self._offered = (key, offer)
        return offer

    def _cap_in_flight(
        self, in_flight: np.ndarray, would_keep: np.ndarray, closed: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each stream's depth and whether it is closed, under its VM's in-flight cap: the cap shared in
        proportion to what each stream would keep in flight (a closed stream its depth, an open one its
        rate times its service)."""
        capped = in_flight[self.streams.vm] > 0
        if not capped.any():
            return np.where(closed, would_keep, 0.0), closed
        share = in_flight[self.streams.vm] * self._part_of_vm(would_keep)
        depth = np.where(capped, np.where(closed, np.minimum(would_keep, share), share), would_keep)
        return np.where(closed | capped, depth, 0.0), closed | capped

    def _tags(self, tags: np.ndarray, passed: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Per stream, the scheduler's reservation and weight per request: a VM's split among its streams
        in proportion to what they pass to the device; a weight on bytes shares bytes (per request:
        weight / size)."""
        if not tags[:2].any():
            return None
        part = self._part_of_vm(passed)
        reservation, weight, on_bytes = tags[:, self.streams.vm]
        return reservation * part, weight * part / np.where(on_bytes > 0, size, 1.0)

    def _part_of_vm(self, amount: np.ndarray) -> np.ndarray:
        """Each stream's part of its VM's total `amount` (0 where the VM has none): how a per-VM setting
        is shared among the VM's streams."""
        vm = self.streams.vm
        total = np.bincount(vm, weights=amount, minlength=self.n_vms)[vm]
        return np.where(total > 0, amount / np.maximum(total, 1e-300), 0.0)

    def _limit(self, offered: np.ndarray, limit: np.ndarray) -> np.ndarray:
        """What each stream's VM limiter lets through, in IOPS: at most `limit` per VM (the epoch's allowance,
        ``sim/io_throttle.py``), shared by its streams in proportion to what they offer."""
        vm = self.streams.vm
        if not (limit[vm] > 0).any():
            return offered
        wanted = np.bincount(vm, weights=offered, minlength=self.n_vms)
        share = np.where((limit > 0) & (wanted > limit), limit / np.maximum(wanted, 1e-300), 1.0)
        return offered * share[vm]
