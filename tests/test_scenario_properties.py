"""Random scenarios run end to end through the command line (hypothesis, seeded): `sova validate` says ok
exactly where `sova run` then runs, no run fails after its simulation, and no result is NaN.

Each draw is a small valid cluster with random workloads, then random overrides: [simulator], [control] and
[topology] keys drawn from their own schemas' ranges, profiles of random policies with random parameters
(drawn from the policies' schemas) and [simulator] keys of their own, sometimes [trials] (placement
profiles) or a [sweep]. A draw may be refused, for a reason validate gives; then run refuses it the same
way. `SOVA_SCENARIO_EXAMPLES` sets how many scenarios a run draws (30 by default; docs/reliability.md gives
the count run once).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sova.cli import main
from sova.model.scenario_fields import CONTROL_FIELDS, SIMULATOR_FIELDS
from sova.model.schema import REQUIRED, Field
from sova.plan.base import registry

EXAMPLES = int(os.environ.get("SOVA_SCENARIO_EXAMPLES", "30"))
MIGRATION = ("threshold-migration", "sandpiper", "dsriov-vlm", "power-aware", "cloudscope")
OTHERS = ("dsriov", "host-standby", "cloudscope-dom0")
PLACEMENT = ("greedy-fill", "greedy-net", "sa-c")
# keys whose random values would only make a run slow (a storage epoch of 1 us), or that need what a
# small draw has not (a custom power curve); each is drawn from values a user would give instead
SIMULATOR_VALUES = {"storage_step": [0.0, 0.025, 0.1, 0.3]}
SKIPPED_PARAMS = {"period", "cycle", "steps", "time_limit", "window", "interval", "history", "vms"}
SHAPES = ("plain", "trials", "plain", "sweep", "plain", "plain", "sweep", "plain", "trials", "plain")  # 6:2:2
NAN_COLUMNS = {"response_time_mean"}  # no request served in that step: documented as NaN in docs/outputs.md


def _number(draw, spec: Field):
    """A value of a numeric key within its range: often its default, else up to four times past it."""
    default = 0.0 if spec.default is REQUIRED or spec.default is None else float(spec.default)
    low = spec.lo if spec.lo is not None else min(0.0, default)
    high = spec.hi if spec.hi is not None else max(4 * default, low + 4)
    if spec.default not in (REQUIRED, None) and draw(st.booleans()):
        return spec.default
    if spec.kind == "int":
        return draw(st.integers(math.ceil(low) + (1 if spec.lo_open else 0), max(math.floor(high), math.ceil(low) + 1)))
    value = draw(st.floats(low, high, allow_nan=False, allow_infinity=False, exclude_min=spec.lo_open))
    return float(f"{value:.4g}") if value > low or not spec.lo_open else high


def _value(draw, spec: Field):
    if spec.choices:
        return draw(st.sampled_from(spec.choices))
    if spec.kind == "bool":
        return draw(st.booleans())
    if spec.kind in ("int", "float", "bandwidth", "size", "memory", "duration"):
        return _number(draw, spec)
    return None  # strings and tables: left at their defaults


def _some(draw, fields: dict[str, Field], most: int, values: dict | None = None) -> dict:
    keys = draw(st.lists(st.sampled_from(sorted(fields)), max_size=most, unique=True))
    out = {}
    for key in keys:
        value = draw(st.sampled_from(values[key])) if values and key in values else _value(draw, fields[key])
        if value is not None:
            out[key] = value
    return out


@st.composite
def scenarios(draw):
    hosts = draw(st.integers(2, 3))
    vms = draw(st.integers(2, 5))
    host_specs = [
        {
            "name": f"h{i}",
            "cores": draw(st.sampled_from([2, 4, 8])),
            "memory": "16GiB",
            "dom0_memory": "2GiB",
            "hypervisor": draw(st.sampled_from(["kvm", "xen"])),
            "nic": {"max_vfs": draw(st.integers(0, 2))},
        }
        for i in range(1, hosts + 1)
    ]
    doc: dict = {
        "scenario": {
            "name": "drawn",
            "duration": draw(st.sampled_from([30, 60, 120])),
            "seed": draw(st.integers(0, 9)),
        },
        "topology": {"kind": draw(st.sampled_from(["single-switch", "leaf-spine", "fat-tree", "three-tier"]))},
        "hosts": host_specs,
        "storage": [{"name": "san"}],
        "vms": [{"name": f"v{i}", "vcpus": draw(st.integers(1, 2)), "memory": "2GiB"} for i in range(1, vms + 1)],
    }
    workloads = []
    for i in range(1, vms + 1):
        kind = draw(st.sampled_from(["lookbusy", "httperf", "netperf", "fio", "none"]))
        if kind == "lookbusy":
            workloads.append({"vm": f"v{i}", "kind": kind, "duty": draw(st.sampled_from([0.3, 0.8, 1.0]))})
        elif kind == "httperf":
            workloads.append({"vm": f"v{i}", "kind": kind, "rate": draw(st.sampled_from([0, 50, 400]))})
        elif kind == "netperf":
            peer = draw(st.sampled_from(["external", *(f"v{k}" for k in range(1, vms + 1) if k != i)]))
            workloads.append({"vm": f"v{i}", "kind": kind, "peer": peer, "rate": draw(st.sampled_from([0, 2e8]))})
        elif kind == "fio":
            workloads.append({"vm": f"v{i}", "kind": kind, "iops": draw(st.sampled_from([50, 500]))})
    doc["workloads"] = workloads or [{"vm": "v1", "kind": "lookbusy"}]
    doc["simulator"] = _some(draw, SIMULATOR_FIELDS, 3, SIMULATOR_VALUES)
    doc["control"] = _some(draw, CONTROL_FIELDS, 2)
    shape = draw(st.sampled_from(SHAPES))
    trials = shape == "trials"
    known = registry()
    profiles = {"none": {"policies": []}}
    for n in range(draw(st.integers(1, 2))):
        choices = st.lists(st.sampled_from(MIGRATION + OTHERS), min_size=1, max_size=2, unique=True)
        names = [draw(st.sampled_from(PLACEMENT))] if trials else draw(choices)
        params = {}
        for name in names:
            fields = {k: f for k, f in known[name].schema.items() if k not in SKIPPED_PARAMS}
            params[name] = _some(draw, fields, 2)
        profile = {"policies": names, "params": params}
        if draw(st.booleans()):
            profile["simulator"] = _some(draw, SIMULATOR_FIELDS, 2, SIMULATOR_VALUES)
        profiles[f"p{n}"] = profile
    doc["profiles"] = profiles
    if trials:
        doc["trials"] = {"count": 2, "warmup": 5}
    elif shape == "sweep":
        key, values = draw(st.sampled_from([("duty", [0.2, 0.9]), ("storage_step", [0.0, 0.1])]))
        if key == "duty":
            doc["workloads"].append({"vm": "v1", "kind": "lookbusy", "duty": 0.5})
            doc["sweep"] = {"table": "workloads", "kind": "lookbusy", "key": key, "values": values}
        else:
            doc["sweep"] = {"table": "simulator", "key": key, "values": values}
    return doc


def toml_text(doc: dict) -> str:
    """The drawn document as TOML: every top-level key an inline value (tables and arrays of tables too)."""
    return "".join(f"{key} = {_inline(value)}\n" for key, value in doc.items())


def _inline(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_inline(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else "nan"
    return json.dumps(value)


def _sova(*args: str) -> tuple[int, str]:
    """`sova ARGS` in this process: its exit status and what it wrote to stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(list(args))
    return status, err.getvalue()


def _no_nan(out: Path) -> None:
    """summary.json is strict JSON, and no metric is NaN but where docs/outputs.md says it may be."""
    json.loads((out / "summary.json").read_text(), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    metrics = out / "metrics.parquet"
    if metrics.exists():
        table = pq.read_table(metrics)
        for name in table.column_names:
            column = table.column(name).to_numpy(zero_copy_only=False)
            if column.dtype.kind == "f" and name not in NAN_COLUMNS:
                assert not np.isnan(column).any(), f"NaN in metrics column {name}"


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios())
def test_validate_agrees_with_run_and_no_run_fails_or_gives_nan(doc):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "drawn.toml"
        path.write_text(toml_text(doc))
        checked, said = _sova("validate", str(path))
        assert checked in (0, 2) and "Traceback" not in said, said
        ran, told = _sova("run", str(path), "--out", str(Path(folder) / "out"), "--quiet")
        assert "Traceback" not in told, told
        assert ran == checked, f"validate said {checked}, run {ran}:\n{said}\n{told}\n{toml_text(doc)}"
        event("refused" if checked else ("trials" if "trials" in doc else "sweep" if "sweep" in doc else "run"))
        if ran == 0:
            _no_nan(Path(folder) / "out")
