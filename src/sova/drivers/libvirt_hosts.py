"""What every part of the libvirt driver shares: the managed hosts and their connections (reopened when a
daemon went away), the VMs' remembered state and where each runs, the background jobs under way, and the
driver's clock. The parts (``libvirt_vfs``, ``libvirt_migration``, ``libvirt_failover``,
``libvirt_dirty_rate``, ``libvirt_io``) each hold one and speak only through its methods.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from sova.drivers.libvirt_common import Job, Refused, VmState, error_text


class HostConnections:
    def __init__(self, hosts: dict[str, str], open_conn: Callable[[str], Any], binding: Any | None):
        """hosts: name -> libvirt URI; open_conn: opens a URI; binding: the libvirt module, for its flag
        values (None: a fake's, whose defaults are libvirt's)."""
        self.uris = dict(hosts)
        self.names = tuple(hosts)
        self.open = open_conn
        self.binding = binding
        self.conns: dict[str, Any] = {}
        self.unreachable: dict[str, str] = {}  # host -> why it could not be reached, while it cannot
        self.vms: dict[str, VmState] = {}
        self.where: dict[str, str] = {}  # VM -> host, from the newest observation
        self.jobs: dict[str, Job] = {}  # VM -> its background job (a migration, a VF unplug)
        self._t0 = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self._t0

    def conn(self, host: str):
        """The host's connection, reopened if it died; None (and why, in ``unreachable``) if it cannot be."""
        conn = self.conns.get(host)
        if conn is not None:
            try:
                if conn.isAlive():
                    return conn
            except Exception:
                pass
            with contextlib.suppress(Exception):
                conn.close()
            self.conns.pop(host, None)
        try:
            conn = self.open(self.uris[host])
        except Exception as e:  # libvirtError, or anything a fake raises
            self.unreachable[host] = str(e).strip() or type(e).__name__
            return None
        self.unreachable.pop(host, None)
        self.conns[host] = conn
        return conn

    def lost(self, host: str, why: str) -> None:
        """A call on the host's connection failed: it is unreachable until it answers again."""
        self.unreachable[host] = why
        self.conns.pop(host, None)

    def dom(self, vm: str):
        """(host, domain) of a running VM; refused when it runs nowhere known, or its host cannot be reached."""
        host = self.where.get(vm)
        if host is None:
            raise Refused(f"{vm} is not running on any managed host")
        conn = self.conn(host)
        if conn is None:
            raise Refused(f"host {host} is unreachable: {self.unreachable.get(host, '')}")
        try:
            return host, conn.lookupByName(vm)
        except Exception as e:
            raise Refused(f"{vm} vanished from {host}: {error_text(e)}") from e

    def running_on(self, conn, host: str) -> list:
        """The guests that run on `host` now (a vanished or stopped one is left out)."""
        out = []
        for vm in (vm for vm, where in self.where.items() if where == host):
            with contextlib.suppress(Exception):
                dom = conn.lookupByName(vm)
                if dom.state()[0] == 1:
                    out.append(dom)
        return out

    def busy(self, vm: str) -> Job | None:
        """The VM's background job, if one is under way."""
        job = self.jobs.get(vm)
        return job if job is not None and not job.done else None

    def flag(self, name: str, default: int) -> int:
        """A libvirt constant by name (`default`, libvirt's value, for a fake)."""
        return getattr(self.binding, name, default) if self.binding is not None else default

    @staticmethod
    def xml(dom) -> str:
        """The domain's live XML ("" if it cannot be read)."""
        try:
            return dom.XMLDesc(0)
        except Exception:
            return ""

    def close(self) -> None:
        for state in self.vms.values():
            if state.channel:
                state.channel.close()
        for conn in self.conns.values():
            with contextlib.suppress(Exception):
                conn.close()
        self.conns.clear()
