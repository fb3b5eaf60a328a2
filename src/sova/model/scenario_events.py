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

    [[events]]
    at = "20min"
    kind = "sensor-gap"     # the host runs on but reports nothing for a while
    host = "h4"
    duration = "45s"

Each event names a host of the scenario; events are applied in time order (those at one time in file order).
A fault that ends (host-recover, nic-up, vf-recover) needs its start (host-crash, nic-down, vf-fail) on the
same host before it, and the same fault does not start again before it ended.
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
    "nic-down": "the host's port to the fabric fails: its VMs reach no other host and not the outside",
    "nic-up": "the host's port works again",
    "vf-fail": "the host NIC's VFs fail: its VMs on a VF fall back to their vNICs; no VF is offered",
    "vf-recover": "the host NIC's VFs work again",
    "sensor-gap": "the host runs on but reports nothing for `duration`",
}
# a fault's start -> its end
FAULT_ENDS = {"host-crash": "host-recover", "nic-down": "nic-up", "vf-fail": "vf-recover"}

EVENT_FIELDS = {
    "at": Field("duration", REQUIRED, "when in the run the event happens", lo=0),
    "kind": Field(
        "str",
        REQUIRED,
        "what happens: " + "; ".join(f"{k}: {v}" for k, v in EVENT_KINDS.items()),
        choices=tuple(EVENT_KINDS),
    ),
    "host": Field("str", REQUIRED, "the host it happens to"),
    "duration": Field("duration", 0.0, "sensor-gap: how long the host reports nothing", lo=0),
}


@dataclass(frozen=True)
class ScenarioEvent:
    at: float  # s into the run
    kind: str  # a key of EVENT_KINDS
    host: str
    duration: float = 0.0  # a sensor gap's length


def read_events(reader: Reader, raw: Any, host_names: list[str], duration: float | None) -> tuple[ScenarioEvent, ...]:
    """The events, in time order; each problem reported with its entry and key."""
    known = set(host_names)
    events = []
    for n, entry in enumerate(reader.entries(raw, "[[events]]"), start=1):
        where = f"[[events]] #{n}"
        before = len(reader.problems)
        t = reader.table(entry, EVENT_FIELDS, where)
        if len(reader.problems) > before:
            continue
        if t["host"] not in known:
            reader.error(f"{where}.host", f"{t['host']!r} is no host of the scenario")
        if duration is not None and t["at"] >= duration:
            reader.error(f"{where}.at", f"{t['at']:g} s is not within the run ({duration:g} s)")
        if (t["kind"] == "sensor-gap") != (t["duration"] > 0):
            reader.error(f"{where}.duration", "a sensor-gap needs a duration above 0, and only a sensor-gap takes one")
        events.append(ScenarioEvent(t["at"], t["kind"], t["host"], t["duration"]))
    events.sort(key=lambda e: e.at)
    _check_faults(reader, events)
    return tuple(events)


def _check_faults(reader: Reader, events: list[ScenarioEvent]) -> None:
    """On each host, each fault starts and ends in turn, starting with its start."""
    started = {end: start for start, end in FAULT_ENDS.items()}
    under: set[tuple[str, str]] = set()  # (host, fault start) under way
    for event in events:
        if event.kind in FAULT_ENDS and (event.host, event.kind) in under:
            reader.error(
                "[[events]]", f"{event.kind} of {event.host} at {event.at:g} s while the last one has not ended"
            )
        elif event.kind in started and (event.host, started[event.kind]) not in under:
            reader.error(
                "[[events]]", f"{event.kind} of {event.host} at {event.at:g} s without a {started[event.kind]}"
            )
        if event.kind in FAULT_ENDS:
            under.add((event.host, event.kind))
        elif event.kind in started:
            under.discard((event.host, started[event.kind]))
