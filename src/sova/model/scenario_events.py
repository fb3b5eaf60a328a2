"""The `[[events]]` of a scenario: what operators do and what breaks, at given times in the run.

    [[events]]
    at = "10min"
    kind = "drain"          # put the host into maintenance: its VMs leave, and it takes no VM
    host = "h3"

    [[events]]
    at = "40min"
    kind = "release"        # the host takes VMs again
    host = "h3"

    [[events]]
    at = "5min"
    kind = "host-crash"     # the host stops with its VMs (a fault)
    host = "h2"

Each event names a host of the scenario; events are applied in time order (those at one time in file order).
A host-recover needs a host-crash of the same host before it (and a crash one after its recovery).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sova.model.schema import REQUIRED, Field, Reader

EVENT_KINDS = {
    "drain": "an operator puts the host into maintenance: keep-rules moves its VMs away; it takes no VM",
    "release": "an operator ends the host's maintenance",
    "host-crash": "the host stops with its VMs; once silent for [control] failure_grace, ha-restart boots them elsewhere",
    "host-recover": "the crashed host boots again; its VMs not restarted elsewhere start on it",
}

EVENT_FIELDS = {
    "at": Field("duration", REQUIRED, "when in the run the event happens", lo=0),
    "kind": Field(
        "str",
        REQUIRED,
        "what happens: " + "; ".join(f"{k}: {v}" for k, v in EVENT_KINDS.items()),
        choices=tuple(EVENT_KINDS),
    ),
    "host": Field("str", REQUIRED, "the host it happens to"),
}


@dataclass(frozen=True)
class ScenarioEvent:
    at: float  # s into the run
    kind: str  # a key of EVENT_KINDS
    host: str


def read_events(r: Reader, raw: Any, host_names: list[str], duration: float | None) -> tuple[ScenarioEvent, ...]:
    """The events, in time order; each problem reported with its entry and key."""
    known = set(host_names)
    events = []
    for n, entry in enumerate(r.entries(raw, "[[events]]"), start=1):
        where = f"[[events]] #{n}"
        before = len(r.problems)
        t = r.table(entry, EVENT_FIELDS, where)
        if len(r.problems) > before:
            continue
        if t["host"] not in known:
            r.error(f"{where}.host", f"{t['host']!r} is no host of the scenario")
        if duration is not None and t["at"] >= duration:
            r.error(f"{where}.at", f"{t['at']:g} s is not within the run ({duration:g} s)")
        events.append(ScenarioEvent(t["at"], t["kind"], t["host"]))
    events.sort(key=lambda e: e.at)
    _check_crashes(r, events)
    return tuple(events)


def _check_crashes(r: Reader, events: list[ScenarioEvent]) -> None:
    """Each host alternates crash and recovery, starting with a crash."""
    down: set[str] = set()
    for event in events:
        if event.kind == "host-crash" and event.host in down:
            r.error("[[events]]", f"{event.host} crashes at {event.at:g} s while it is down already")
        elif event.kind == "host-recover" and event.host not in down:
            r.error("[[events]]", f"{event.host} recovers at {event.at:g} s, but has not crashed")
        if event.kind == "host-crash":
            down.add(event.host)
        elif event.kind == "host-recover":
            down.discard(event.host)
