"""Each guest's memory dirty rate, for the migration model: libvirt's dirty-rate calculation (a 1 s sample)
started every ``dirty_rate_every`` seconds, and read back from the domain stats once it completes. Never
started on a domain in a job (a migration): the call would wait for the job's end, and the observation
with it.

A part of ``LibvirtDriver`` (drivers/libvirt_driver.py).
"""

from __future__ import annotations

import contextlib

from sova.drivers.libvirt_hosts import HostConnections


class DirtyRates:
    def __init__(self, hosts: HostConnections, every: float):
        self.hosts = hosts
        self.every = every
        self._rates: dict[str, tuple[float, float]] = {}  # VM -> (bytes/s, when the calculation started)

    def rate(self, name: str, dom, stats: dict, now: float) -> float:
        """The VM's newest dirty rate (bytes/s), starting the next calculation when one is due."""
        rate, started = self._rates.get(name, (0.0, -1e9))
        if "dirtyrate.megabytes_per_second" in stats and stats.get("dirtyrate.calc_status") == 2:
            rate = stats["dirtyrate.megabytes_per_second"] * 2**20
        if self.every > 0 and now - started >= self.every and not self._in_a_job(name, dom):
            with contextlib.suppress(Exception):
                dom.startDirtyRateCalc(1, 0)
                started = now
        self._rates[name] = (rate, started)
        return rate

    def _in_a_job(self, name: str, dom) -> bool:
        """A domain in a job (a migration, ours or anyone's): a dirty-rate calculation would wait for its end."""
        if self.hosts.busy(name) is not None:
            return True
        try:
            return dom.jobInfo()[0] != 0  # VIR_DOMAIN_JOB_NONE
        except Exception:
            return False
