"""Host failures on real hosts: when each host last answered, its VMs shown as it last saw them while it
is silent, and HA restart (``restart-vm``): the VM's persistent definition, read while its host was up,
defined on another host and started there, from disks on storage both hosts reach.

The driver cannot tell a crashed host from one it cannot reach: ha-restart fences the silent host first
(``fence-host``: its domains destroyed if its daemon answers, else an operator's confirmation), unless
told that disk locks (sanlock, virtlockd) guard. The old definition stays on the failed host, shut off,
for an operator to remove.

A part of ``LibvirtDriver`` (drivers/libvirt_driver.py): it reaches hosts and VMs through the driver's
``HostConnections``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from sova.drivers.last_report import with_vms_of_silent_hosts
from sova.drivers.libvirt_common import Refused, error_text
from sova.drivers.libvirt_hosts import HostConnections
from sova.model.actions import OK, Outcome, RestartVM
from sova.model.snapshot import Snapshot


class HostFailover:
    def __init__(self, hosts: HostConnections):
        self.hosts = hosts
        self._seen: dict[str, float] = {}  # host -> when it last answered
        self._last_heard: Snapshot | None = None

    def heard(self, host: str, now: float) -> None:
        """The host answered now."""
        self._seen[host] = now

    def hold_silent(self, snap: Snapshot) -> Snapshot:
        """`snap` with host_seen, and the silent hosts' rows and VMs as last heard."""
        seen = np.array([self._seen.get(h, 0.0) for h in self.hosts.names])
        silent = seen < snap.time
        if silent.any() and self._last_heard is not None:
            snap = with_vms_of_silent_hosts(snap, self._last_heard, silent)
        snap = dataclasses.replace(snap, host_seen=seen)
        self._last_heard = snap
        return snap

    def remember(self, state, dom) -> None:
        """Keep a VM's persistent definition, read once (its inactive XML)."""
        if not state.definition:
            try:
                state.definition = dom.XMLDesc(self.hosts.flag("VIR_DOMAIN_XML_INACTIVE", 2))
            except Exception:
                state.definition = ""

    def restart(self, action: RestartVM, now: float) -> Outcome:
        """Define the VM (as last read) on the action's host and start it there."""
        state = self.hosts.vms.get(action.vm)
        if state is None or not state.definition:
            raise Refused(f"no definition of {action.vm} was read while its host was up")
        running = self.hosts.where.get(action.vm)
        if running is not None:
            raise Refused(f"{action.vm} runs on {running}; not restarted")
        conn = self.hosts.conn(action.host)
        if conn is None:
            raise Refused(f"host {action.host} is unreachable: {self.hosts.unreachable.get(action.host, '')}")
        try:
            conn.defineXML(state.definition).create()
        except Exception as e:
            raise Refused(f"{action.vm} could not be started on {action.host}: {error_text(e)}") from e
        return Outcome(OK, f"{action.vm} defined and started on {action.host}", now, self.hosts.now())
