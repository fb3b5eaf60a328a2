"""The libvirt driver's fast IO control pair (model/io_sample.py): block counters of some VMs, read in
one getAllDomainStats call per host restricted to block statistics, and IO throttles written with
setBlockIoTune's total_iops_sec on each of a VM's disks, only when a VM's rounded limit changed (QEMU
takes whole requests per second).

A VM that is not running anywhere reads as NaN (its controller holds); a VM that cannot be throttled
(vanished mid-way, host unreachable) is skipped and retried at the next epoch. QEMU has no per-disk
request-merge limit (a guest's queue/max_sectors_kb sets one), so a throttle's size is not applied, nor
are a scheduler's tags (QEMU throttles each disk on its own) or a cap on requests in flight (a disk's
queue size is fixed at boot): the first one asked for is logged once.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

import numpy as np

from sova.drivers.libvirt_common import NS
from sova.drivers.libvirt_hosts import HostConnections
from sova.model.io_sample import IoSample, IoThrottle

log = logging.getLogger(__name__)
_DISK_TARGET = re.compile(r"<target dev='(\w+)' bus=")
BLOCK_STATS = 32  # VIR_DOMAIN_STATS_BLOCK


def block_counters(stats: dict) -> tuple[float, float, float]:
    """(requests, bytes, seconds in flight) summed over a domain's disks."""
    requests = volume = busy = 0.0
    for i in range(int(stats.get("block.count", 0))):
        requests += stats.get(f"block.{i}.rd.reqs", 0) + stats.get(f"block.{i}.wr.reqs", 0)
        volume += stats.get(f"block.{i}.rd.bytes", 0) + stats.get(f"block.{i}.wr.bytes", 0)
        busy += (stats.get(f"block.{i}.rd.times", 0) + stats.get(f"block.{i}.wr.times", 0)) * NS
    return requests, volume, busy


class LibvirtIo:
    """The pair, for a LibvirtDriver (through its HostConnections: connections, clock and flags)."""

    def __init__(self, hosts: HostConnections):
        self.hosts = hosts
        self._set: dict[str, int] = {}  # the total_iops_sec last written per VM
        self._disks: dict[str, list[str]] = {}
        self._size_noted = False
        self._tags_noted = False
        self._in_flight_noted = False

    def sample(self, vms: Sequence[str]) -> IoSample:
        hosts = self.hosts
        wanted = set(vms)
        found: dict[str, tuple[float, float, float]] = {}
        for host in hosts.names:
            conn = hosts.conn(host)
            if conn is None:
                continue
            for dom, stats in conn.getAllDomainStats(BLOCK_STATS, 0):
                name = dom.name()
                if name in wanted:
                    found[name] = block_counters(stats)
        rows = np.array([found.get(vm, (np.nan, np.nan, np.nan)) for vm in vms], dtype=float).reshape(len(vms), 3)
        return IoSample(hosts.now(), rows[:, 0], rows[:, 1], rows[:, 2])

    def throttle(self, throttle: IoThrottle) -> None:
        hosts = self.hosts
        if not self._size_noted and np.any(throttle.size > 0):
            self._size_noted = True
            log.warning("libvirt has no request-merge limit for a disk: IO size limits are not applied")
        if not self._in_flight_noted and throttle.in_flight is not None and np.any(throttle.in_flight > 0):
            self._in_flight_noted = True
            log.warning("libvirt cannot cap a running disk's requests in flight: latency controls are not applied")
        if not self._tags_noted and (throttle.reservation is not None or throttle.weight is not None):
            self._tags_noted = True
            log.warning(
                "libvirt has no reservation or weight scheduler shared by several VMs' disks (mClock, DRR): "
                "only their IO rate limits are applied"
            )
        live = hosts.flag("VIR_DOMAIN_AFFECT_LIVE", 1)
        for vm, iops in zip(throttle.vms, throttle.iops, strict=True):
            value = max(1, round(float(iops))) if iops > 0 else 0
            if self._set.get(vm) == value:
                continue
            try:
                _, dom = hosts.dom(vm)
                disks = self._disks.get(vm) or _DISK_TARGET.findall(hosts.xml(dom))
                self._disks[vm] = disks
                for disk in disks:
                    dom.setBlockIoTune(disk, {"total_iops_sec": value}, live)
            except Exception as e:  # refused, vanished, unreachable: retried at the next epoch
                log.debug("IO throttle of %s not set: %s", vm, e)
                continue
            self._set[vm] = value
