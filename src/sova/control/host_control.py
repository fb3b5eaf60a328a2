"""Maintenance of a running `sova manage`: drain and release requests from `sova host ... --socket`.

Requests come on the manage's control socket (the one `sova slo` uses), one JSON object per line:

    {"op": "drain", "host": "node3"}     -> {"ok": true, "host": "node3", "maintenance": true, "vms": 4, ...}
    {"op": "release", "host": "node3"}
    {"op": "hosts"}                      -> {"ok": true, "hosts": [{"name": ..., "vms": ..., "maintenance": ...}]}

The socket's threads only queue a request; the manage loop applies the queue between ticks
(``take``), as the service's manager applies the API's, and publishes what it saw after each tick
(``publish``), which is what ``hosts`` answers. A host is known once the loop has observed it.
"""

from __future__ import annotations

import threading

import numpy as np

from sova.model.snapshot import Snapshot

OPS = ("drain", "release", "hosts")


class HostControl:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: list[tuple[str, bool]] = []  # (host, drain) in the order asked
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
            drain = op == "drain"
            if not drain and host not in self._maintenance:
                return {"ok": False, "error": f"{host} is not in maintenance"}
            self._queue.append((host, drain))
            (self._maintenance.add if drain else self._maintenance.discard)(host)
            return {"ok": True, "host": host, "maintenance": drain, "by": "operator", "vms": known[host]["vms"]}

    def take(self) -> list[tuple[str, bool]]:
        """The requests asked since the last call, oldest first (the manage loop applies them)."""
        with self._lock:
            queue, self._queue = self._queue, []
            return queue

    def publish(self, snap: Snapshot) -> None:
        """What the loop saw: each host, its VMs, and whether it is in maintenance."""
        counts = np.bincount(snap.vm_host, minlength=len(snap.hosts))
        with self._lock:
            self._hosts = [{"name": host, "vms": int(counts[h])} for h, host in enumerate(snap.hosts)]
