"""Actions and outcomes on the wire: every kind round-trips, and a bad message is refused by name."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sova.model.actions import ACTION_KINDS, OK, AttachVF, Migrate, Outcome, SetIoLimit
from sova.service.wire import WireError, decode_action, decode_outcome, encode_action, encode_outcome

VALUES = {
    "str": st.text(min_size=1, max_size=20),
    "int": st.integers(0, 10_000),
    "float": st.floats(0, 1e12, allow_nan=False, allow_infinity=False),
}


@st.composite
def actions(draw):
    cls = draw(st.sampled_from(sorted(ACTION_KINDS.values(), key=lambda c: c.__name__)))
    return cls(**{f.name: draw(VALUES[str(f.type)]) for f in fields(cls)})


@settings(max_examples=200, deadline=None)
@given(action=actions(), action_id=st.text(min_size=1, max_size=40))
def test_every_action_kind_round_trips_with_its_id(action, action_id):
    assert decode_action(encode_action(action_id, action)) == (action_id, action)


def test_an_outcome_round_trips_with_its_details():
    outcome = Outcome(OK, "moved", 1.5, 9.25, {"duration": 7.75, "downtime": 0.05})
    assert decode_outcome(encode_outcome("a1", outcome)) == ("a1", outcome)


def message(**fields) -> bytes:
    return json.dumps({"id": "a1", "kind": "set-cpu", "vm": "vm1", "weight": 256, "cap": 0.5} | fields).encode()


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (b"not json", "action: not JSON"),
        (b"[1, 2]", "action: expected a JSON object"),
        (message(kind="reboot"), "action.kind: 'reboot' is not one of"),
        (message(id=""), "id: expected non-empty text"),
        (message(weight=256.5), "action (set-cpu).weight: expected a whole number"),
        (message(weight=True), "action (set-cpu).weight: expected a whole number"),
        (message(cap="half"), "action (set-cpu).cap: expected a finite number"),
        (message(vm=7), "action (set-cpu).vm: expected text"),
        (message(host="h1"), "action (set-cpu): unexpected field(s) host"),
        (b'{"id": "a1", "kind": "set-cpu", "vm": "vm1", "weight": 1, "cap": NaN}', "cap: expected a finite number"),
        (b'{"id": "a1", "kind": "set-io-limit", "vm": "vm1", "iops": Infinity}', "iops: expected a finite number"),
        (b'{"id": "a1", "kind": "migrate", "vm": "vm1"}', "action (migrate).dst: missing"),
    ],
)
def test_a_bad_action_is_refused_naming_the_field(payload, error):
    with pytest.raises(WireError, match=error.replace("(", r"\(").replace(")", r"\)")):
        decode_action(payload)


def test_a_field_with_a_default_may_be_left_out():
    assert decode_action(b'{"id": "a1", "kind": "attach-vf", "vm": "vm1"}') == ("a1", AttachVF(vm="vm1"))


def test_an_action_that_cannot_be_json_is_not_encoded():
    with pytest.raises(ValueError):
        encode_action("a1", SetIoLimit(vm="vm1", iops=float("nan")))


def test_an_actions_expiry_round_trips_and_must_be_a_finite_time():
    from sova.service.wire import decode_envelope

    action = Migrate(vm="vm1", dst="h2")
    assert decode_envelope(encode_action("a1", action, 1.5e9)) == ("a1", action, 1.5e9)
    assert decode_envelope(encode_action("a1", action)) == ("a1", action, None)
    with pytest.raises(WireError, match=r"action\.expires: expected a finite number"):
        decode_envelope(b'{"id": "a1", "kind": "migrate", "vm": "v", "dst": "h", "expires": "soon"}')
