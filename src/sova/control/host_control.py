"""Maintenance of a running `sova manage`: drain and release requests from `sova host ... --socket`, and an
operator's confirmation that a failed host is off (fenced), after which ha-restart starts its VMs elsewhere.

Requests come on the manage's control socket (the one `sova slo` uses), one JSON object per line:

    {"op": "drain", "host": "node3"}     -> {"ok": true, "host": "node3", "maintenance": true, "vms": 4, ...}
    {"op": "release", "host": "node3"}
    {"op": "fenced", "host": "node3"}    -> {"ok": true, "host": "node3", "fenced": true, "vms": 4, ...}
    {"op": "hosts"}                      -> {"ok": true, "hosts": [{"name": ..., "vms": ..., "maintenance": ...}]}

The socket's threads only queue a request; the manage loop applies the queue between ticks
(``take``), as the service's manager applies the API's, and publishes what it saw after each tick
(``publish``), which is what ``hosts`` answers. A host is known once the loop has observed it.
"""

from __future__ import annotations

import threading

import numpy as np

from sova.model.snapshot import Snapshot

OPS = ("drain", "release", "fenced", "hosts")


class HostControl:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: list[tuple[str, str]] = []  # (host, op) in the order asked
        self._hosts: list[dict] = []  # as the loop last published them
        self._maintenance: set[str] = set()  # hosts drained, as asked (the loop applies them next)

    def handle(self, request: dict) -> dict:
        """One request's answer (the socket's thread)."""
        op, host = request.get("op"), request.get("host")
        with self._lock:
            if op == "hosts":
                rows = [{**row, "maintenance": row["name"] in self._maintenance} for row in self._hosts]
                return {"ok": True, "hosts": rows}
            known = {row["name"]: row for row in self._hosts}
            if not isinstance(host, str) or host not in known:
                names = ", ".join(known) or "none observed yet"
                return {"ok": False, "error": f"host: expected a managed host ({names}), got {host!r}"}
            if op == "fenced":
                if not known[host].get("failed"):
                    return {"ok": False, "error": f"{host} is not declared failed; only a failed host is fenced"}
                self._queue.append((host, op))
                return {"ok": True, "host": host, "fenced": True, "by": "operator", "vms": known[host]["vms"]}
            drain = op == "drain"
            if not drain and host not in self._maintenance:
                return {"ok": False, "error": f"{host} is not in maintenance"}
            self._queue.append((host, op))
            (self._maintenance.add if drain else self._maintenance.discard)(host)
            return {"ok": True, "host": host, "maintenance": drain, "by": "operator", "vms": known[host]["vms"]}

    def take(self) -> list[tuple[str, str]]:
        """The requests asked since the last call, oldest first (the manage loop applies them)."""
        with self._lock:
            queue, self._queue = self._queue, []
            return queue

    def publish(self, snap: Snapshot, failed: list[str]) -> None:
        """What the loop saw: each host, its VMs, and whether it is declared failed."""
        counts = np.bincount(snap.vm_host, minlength=len(snap.hosts))
        with self._lock:
            self._hosts = [
                {"name": host, "vms": int(counts[h]), "failed": host in failed} for h, host in enumerate(snap.hosts)
            ]
