"""The cluster snapshot a running `sova manage` gives on its control socket (`sova snapshot export --socket`,
`sova what-if --socket`):

    {"op": "snapshot", "name": "cluster", "demand_file": "cluster.demand.parquet",
     "window": 600, "interval": 10, "after": "last", "duration": 1800}
    -> {"ok": true, "document": {...the scenario's tables...}, "demand": "<the demand file, Parquet, base64>"}

The socket's thread only queues the request; the manage loop answers it between ticks from its Knowledge,
which only the loop touches (as drains are applied), and the thread waits for that answer (at most
ANSWER_SECONDS: a manage in approve mode waiting at its prompt answers none until the prompt is answered).
"""

from __future__ import annotations

import base64
import logging
import math
import threading
from dataclasses import dataclass, field
from typing import Any

from sova.model.cluster_snapshot import ExportSettings, SnapshotError, export_snapshot
from sova.model.knowledge import Knowledge
from sova.model.observed_demand import ObservedDemand, demand_bytes
from sova.model.storage_slo import SloBook

log = logging.getLogger(__name__)
ANSWER_SECONDS = 60.0  # how long a request waits for the loop to answer it


@dataclass
class _Request:
    name: str
    demand_file: str
    settings: ExportSettings
    done: threading.Event = field(default_factory=threading.Event)
    answer: dict = field(default_factory=dict)


class SnapshotService:
    """Snapshot requests from the socket's threads, answered by the manage loop (`serve`)."""

    def __init__(self, profile: dict[str, Any], control: dict[str, Any], book: SloBook | None = None):
        """profile: the running profile as a scenario's [profiles.NAME] table (with its name under "name");
        control: the rails as a [control] table; book: the tenants' storage SLOs, if the profile holds them."""
        self.profile = profile
        self.control = control
        self.book = book
        self._lock = threading.Lock()
        self._queue: list[_Request] = []

    def handle(self, request: dict, wait: float = ANSWER_SECONDS) -> dict:
        """One request's answer (the socket's thread): checked, queued, and waited for."""
        try:
            queued = _Request(_text(request, "name", "cluster"), _text(request, "demand_file", ""), _settings(request))
        except ValueError as exc:
            return {"ok": False, "error": str(exc)}
        with self._lock:
            self._queue.append(queued)
        if not queued.done.wait(wait):
            with self._lock:
                if queued in self._queue:
                    self._queue.remove(queued)
            return {"ok": False, "error": f"the manage loop did not answer within {wait:g} s"}
        return queued.answer

    def serve(self, knowledge: Knowledge) -> None:
        """Answer every queued request from `knowledge` (the manage loop, between ticks)."""
        with self._lock:
            queue, self._queue = self._queue, []
        for request in queue:
            try:
                request.answer = self._answer(knowledge, request)
            except Exception as exc:  # a snapshot that fails must not stop the loop that manages the hosts
                log.exception("snapshot request failed")
                request.answer = {"ok": False, "error": f"the snapshot failed: {type(exc).__name__}: {exc}"}
            finally:
                request.done.set()

    def _answer(self, knowledge: Knowledge, request: _Request) -> dict:
        try:
            document, demand = running_snapshot(
                knowledge, request.settings, self.profile, self.control, self.book, request.name, request.demand_file
            )
        except SnapshotError as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True, "document": document, "demand": base64.b64encode(demand_bytes(demand)).decode()}


def running_snapshot(
    knowledge: Knowledge,
    settings: ExportSettings,
    profile: dict[str, Any],
    control: dict[str, Any],
    book: SloBook | None = None,
    name: str = "cluster",
    demand_file: str = "",
    source: str = "sova manage",
) -> tuple[dict, ObservedDemand]:
    """A running manager's cluster as a scenario (its tables, and the demand file's series): its profiles are
    doing nothing and `profile` (a [profiles.NAME] table with its name under "name"), its rails `control`,
    its storage SLOs `book`'s. SnapshotError when the Knowledge holds too little."""
    if len(knowledge) < 2:
        raise SnapshotError("nothing observed yet: ask again once the loop has run a while")
    running = profile.get("name", "running")
    table = {key: value for key, value in profile.items() if key != "name"}
    profiles = {"nothing": {"policies": []}} | ({running: table} if table.get("policies") else {})
    slos = tuple((vm, book.slo(vm)) for vm in book.under_control()) if book is not None else ()
    return export_snapshot(
        knowledge,
        settings,
        name,
        demand_file or f"{name}.demand.parquet",
        profiles=profiles,
        slos=slos,
        control=control,
        source=source,
    )


def _text(request: dict, key: str, default: str) -> str:
    value = request.get(key, default)
    if not isinstance(value, str) or (key == "name" and not value) or "/" in value or "\0" in value:
        raise ValueError(f"{key}: expected a file name, got {value!r}")
    return value


def _settings(request: dict) -> ExportSettings:
    """The export's settings from the request, each a finite number above 0 where given."""
    defaults = ExportSettings()
    values = {}
    for key in ("window", "interval", "duration"):
        value = request.get(key, getattr(defaults, key))
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{key}: expected a number of seconds above 0, got {value!r}")
        values[key] = float(value)
    after = request.get("after", defaults.after)
    if after not in ("last", "mean", "ar"):
        raise ValueError(f"after: expected 'last', 'mean' or 'ar', got {after!r}")
    return ExportSettings(values["window"], values["interval"], after, values["duration"])
