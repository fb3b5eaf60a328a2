"""The scenario loader fuzzed: a valid scenario with one to three keys set to random values (any type,
NaN and infinity included, nested lists and tables, new keys where a table is) is either taken or refused
with an InputError whose every problem names its place; never a traceback. It found a `kind` given as a
list or a table, which crashed the loader with a TypeError."""

from __future__ import annotations

import copy
import tomllib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import SMALL
from sova.model.scenario_reader import scenario_from_dict
from sova.model.schema import InputError
from sova.model.trace_sets import TraceError

BASE = tomllib.loads(SMALL)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["1GiB", "10Gb/s", "5min", "auto", "h1", "first-fit", "-1", "nan", "inf", "${x}", "v*"]),
)
VALUES = st.recursive(
    SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6,
)  # fmt: skip
KEYS = ("name", "duration", "step", "seed", "count", "cores", "memory", "host", "vcpus", "kind", "vm", "util")
KEYS += ("policies", "params", "nic", "bandwidth", "files", "block", "from_trace", "arrive", "depart", "admission")
KEYS += ("csv", "per_vm", "values", "table", "key", "match", "power_model", "power_curve", "mips", "simulator")


def places(doc, prefix=()):
    """Every key and list item of the document, as a path."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield (*prefix, key)
        yield from places(value, (*prefix, key))


def at(doc, path):
    for part in path:
        doc = doc[part]
    return doc


def mangled(data, base: dict, keys: tuple[str, ...]) -> dict:
    """A copy of `base` with one to three values replaced, or keys (of `keys`) added, by random values."""
    doc = copy.deepcopy(base)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from([(), *places(doc)]))
        value = data.draw(VALUES)
        if path and data.draw(st.booleans()):
            at(doc, path[:-1])[path[-1]] = value  # a value of the wrong type, range or shape
        elif isinstance(at(doc, path), dict):
            at(doc, path)[data.draw(st.sampled_from(keys))] = value  # a key where it may or may not belong
    return doc


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_mangled_scenario_is_taken_or_refused_with_every_problem_placed(data):
    doc = mangled(data, BASE, KEYS)
    try:
        scenario_from_dict(doc)
    except InputError as err:
        assert err.problems and all(p.location and p.message for p in err.problems)
    except TraceError as err:  # a file the scenario names: the message names it
        assert str(err)
