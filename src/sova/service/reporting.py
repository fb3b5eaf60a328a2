"""Host reports over the bus: each agent publishes its host's report every period on plain NATS
(``sova.report.HOST``: a lost report is superseded by the next, so none is stored), and the manager keeps
the latest of each host and merges them into the Snapshot its global loops observe."""

from __future__ import annotations

import logging

from sova.drivers.base import Driver
from sova.model.snapshot import Snapshot
from sova.service.bus import Bus, host_token
from sova.service.host_report import ReportError, decode, encode, merge

log = logging.getLogger(__name__)


async def publish_report(bus: Bus, driver: Driver, host: str) -> int:
    """Observe the host through its driver and publish its report; the report's size in bytes."""
    payload = encode(driver.observe(), host)
    await bus.client.publish(f"sova.report.{host_token(host)}", payload)
    return len(payload)


class ReportCollector:
    """The manager's view: the latest report of every host that has reported."""

    def __init__(self, bus: Bus):
        self.bus = bus
        self.latest: dict[str, tuple[Snapshot, list[str]]] = {}
        self.refused = 0
        self.subscription = None

    async def start(self) -> None:
        self.subscription = await self.bus.client.subscribe("sova.report.*", cb=self._take)

    async def _take(self, message) -> None:
        host = message.subject.rsplit(".", 1)[-1]
        try:
            part, destinations = decode(message.data)
        except ReportError as err:
            self.refused += 1
            log.warning("refused a report on %s: %s", message.subject, err)
            return
        if part.hosts[0] != host:
            self.refused += 1
            log.warning("refused a report on %s: it is %s's", message.subject, part.hosts[0])
            return
        before = self.latest.get(host)
        if before is None or part.time >= before[0].time:  # an older report arriving late changes nothing
            self.latest[host] = (part, destinations)

    def snapshot(self) -> Snapshot | None:
        """The merged view of every host's latest report (hosts in name order), or None before any."""
        if not self.latest:
            return None
        return merge([self.latest[host] for host in sorted(self.latest)])
