"""Actions and outcomes as JSON on the bus: ``{"id": ..., "kind": ..., "expires": ..., fields...}``
(``expires``, optional: the wall-clock time after which the action must not start).

Decoding is strict: an unknown kind, a missing or unexpected field, or a value of the wrong type (NaN and
infinity included) raises WireError naming the field, so a bad message is refused whole.
"""

from __future__ import annotations

import json
import math
from dataclasses import MISSING, fields
from typing import Any

from sova.model.actions import ACTION_KINDS, Action, Outcome


class WireError(ValueError):
    """A message that is not a well-formed action or outcome."""


def encode_action(action_id: str, action: Action, expires: float | None = None) -> bytes:
    """`expires`: the wall-clock time (Unix seconds) after which the agent must not start it."""
    body = {f.name: getattr(action, f.name) for f in fields(action)}
    envelope = {"id": action_id, "kind": action.kind} | ({"expires": expires} if expires is not None else {})
    return json.dumps(envelope | body, allow_nan=False).encode()


def decode_action(payload: bytes) -> tuple[str, Action]:
    """The action id and the action of a message."""
    action_id, action, _ = decode_envelope(payload)
    return action_id, action


def decode_envelope(payload: bytes) -> tuple[str, Action, float | None]:
    """The action id, the action, and when it expires (None: never) of a message."""
    raw = _object(payload, "action")
    expires = raw.pop("expires", None)
    if expires is not None:
        expires = _typed(expires, "float", "action.expires")
    action_id = _text(raw, "id")
    kind = _text(raw, "kind")
    cls = ACTION_KINDS.get(kind)
    if cls is None:
        raise WireError(f"action.kind: {kind!r} is not one of {', '.join(sorted(ACTION_KINDS))}")
    expected = {f.name: f for f in fields(cls)}
    unexpected = sorted(set(raw) - set(expected) - {"id", "kind"})
    if unexpected:
        raise WireError(f"action ({kind}): unexpected field(s) {', '.join(unexpected)}")
    values: dict[str, Any] = {}
    for name, f in expected.items():
        if name not in raw:
            if f.default is not MISSING:
                continue
            raise WireError(f"action ({kind}).{name}: missing")
        values[name] = _typed(raw[name], f.type, f"action ({kind}).{name}")
    return action_id, cls(**values), expires


def encode_outcome(action_id: str, outcome: Outcome) -> bytes:
    body = {
        "id": action_id,
        "status": outcome.status,
        "message": outcome.message,
        "started": outcome.started,
        "finished": outcome.finished,
        "details": outcome.details,
    }
    return json.dumps(body, allow_nan=False, default=str).encode()


def decode_outcome(payload: bytes) -> tuple[str, Outcome]:
    raw = _object(payload, "outcome")
    action_id, status, message = _text(raw, "id"), _text(raw, "status"), raw.get("message", "")
    if not isinstance(message, str):
        raise WireError("outcome.message: expected text")
    started = _typed(raw.get("started", 0.0), "float", "outcome.started")
    finished = raw.get("finished")
    finished = None if finished is None else _typed(finished, "float", "outcome.finished")
    details = raw.get("details", {})
    if not isinstance(details, dict):
        raise WireError("outcome.details: expected an object")
    return action_id, Outcome(status, message, started, finished, details)


def _object(payload: bytes, what: str) -> dict:
    try:
        raw = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise WireError(f"{what}: not JSON ({err})") from None
    if not isinstance(raw, dict):
        raise WireError(f"{what}: expected a JSON object")
    return raw


def _text(raw: dict, key: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise WireError(f"{key}: expected non-empty text")
    return value


def _typed(value: Any, annotation: Any, where: str) -> Any:
    """`value` checked against a dataclass field's annotation (the actions use str, int and float)."""
    kind = str(annotation)
    if kind == "str":
        if not isinstance(value, str):
            raise WireError(f"{where}: expected text")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise WireError(f"{where}: expected a whole number")
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise WireError(f"{where}: expected a finite number")
        return float(value)
    raise WireError(f"{where}: no wire form for a field of type {kind}")
