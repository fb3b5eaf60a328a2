"""Host reports over the bus: each agent publishes its host's report every period on plain NATS
(``sova.report.HOST``: a lost report is superseded by the next, so none is stored), and the manager keeps
the latest of each host and merges them into the Snapshot its global loops observe.

A host that stopped reporting stays in that Snapshot as its last report showed it, with ``host_seen``
saying when that was (the cluster's clock), so the runtime can declare it failed after ``failure_grace``
and ha-restart knows its VMs; a VM a newer report of another host holds (restarted there) is left out of
the silent host's part.

A report carries its wall-clock send time in the ``Sova-Sent`` header, so the manager can tell the bus's
lag (across machines this relies on their clocks being synchronised, as NTP keeps them), and how the
cluster's clock (the reports' times) stands to the wall clock (``ClusterClock``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from sova.model.snapshot import Snapshot
from sova.service.bus import Bus, BusError, Listener, host_token, report_subject
from sova.service.cluster_clock import ClusterClock
from sova.service.host_report import ReportError, decode, encode, merge, without_vms

log = logging.getLogger(__name__)
SENT = "Sova-Sent"


async def publish_report(bus: Bus, snapshot: Snapshot, host: str) -> int:
    """Publish a host's report, from a snapshot that holds it; the report's size in bytes."""
    payload = encode(snapshot, host)
    await bus.client.publish(report_subject(host), payload, headers={SENT: repr(time.time())})
    return len(payload)


class ReportCollector(Listener):
    """The manager's view: the latest report of every host that has reported, and when it came."""

    subject = "sova.report.*"

    def __init__(self, bus: Bus, stale_after: float = 30.0):
        """stale_after: wall seconds after which a host that has not reported is left out of the view."""
        self.bus = bus
        self.stale_after = stale_after
        self.latest: dict[str, tuple[Snapshot, list[str]]] = {}
        self.received: dict[str, float] = {}  # host -> monotonic time its latest report came
        self.received_at: dict[str, float] = {}  # host -> the same on the wall clock (s since the epoch)
        self.received_count = 0
        self.refused = 0
        self.on_lag: Callable[[float], None] = lambda seconds: None  # each report's send-to-receipt time (s)
        self.version = 0  # grows with every report taken
        self.clock = ClusterClock()  # the reports' times against the wall clock they were sent at
        self._merged: tuple[tuple, Snapshot] | None = None

    async def _take(self, message) -> None:
        host = message.subject.rsplit(".", 1)[-1]
        try:
            host_token(host)
            part, destinations = decode(message.data)
        except (ReportError, BusError) as err:
            self.refused += 1
            log.warning("refused a report on %s: %s", message.subject, err)
            return
        if part.hosts[0] != host:
            self.refused += 1
            log.warning("refused a report on %s: it is %s's", message.subject, part.hosts[0])
            return
        self.received_count += 1
        sent = _sent_at(message.headers)
        if sent is not None:
            self.on_lag(max(0.0, time.time() - sent))
        before = self.latest.get(host)
        if before is None or part.time >= before[0].time:  # an older report arriving late changes nothing
            self.latest[host] = (part, destinations)
            self.received[host] = time.monotonic()
            self.received_at[host] = time.time()
            self.version += 1
            self.clock.note(part.time, time.time() if sent is None else sent)

    def fresh(self) -> list[str]:
        """The hosts whose latest report is at most `stale_after` old, in name order (the health listener's
        thread asks too: the dict is copied whole, in one step, before it is read)."""
        oldest = time.monotonic() - self.stale_after
        return sorted(h for h, at in self.received.copy().items() if at >= oldest)

    def snapshot(self) -> Snapshot | None:
        """The merged view of every host's latest report (hosts in name order) with when each came
        (``host_seen``), or None while no host's report is fresh."""
        if not self.fresh():
            return None
        if self._merged is None or self._merged[0] != self.version:
            self._merged = (self.version, self._merge())
        return self._merged[1]

    def _merge(self) -> Snapshot:
        hosts = sorted(self.latest)
        reports: dict[str, tuple[Snapshot, list[str]]] = {}
        held: set[str] = set()
        for host in sorted(hosts, key=lambda h: self.latest[h][0].time, reverse=True):  # the newest first
            reports[host] = without_vms(self.latest[host], held)
            held.update(reports[host][0].vms)
        seen = np.array([self.latest[host][0].time for host in hosts])
        return replace(merge([reports[host] for host in hosts]), host_seen=seen)


def _sent_at(headers: dict | None) -> float | None:
    """The wall-clock time a report says it was sent at (None: it says none, or nothing finite)."""
    with contextlib.suppress(KeyError, TypeError, ValueError):
        sent = float((headers or {})[SENT])
        if math.isfinite(sent):
            return sent
    return None
