"""summary.json: strict JSON (never NaN or Infinity, which JSON.parse rejects), with the reason for every
null under "undefined", and the scenario header every results document starts with."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from sova.model.scenario import Scenario
from sova.report.metrics import NOT_FINITE


def scenario_header(scenario: Scenario) -> dict:
    """What every summary.json says of its scenario (the file, without the value a sweep appends)."""
    return {
        "name": scenario.name,
        "description": scenario.description,
        "source": scenario.source.split(" [")[0],
        "duration": scenario.duration,
        "step": scenario.step,
        "seed": scenario.seed,
    }


def write_summary(d: Path, doc: dict) -> None:
    """summary.json as strict JSON (never NaN or Infinity, which JSON.parse rejects)."""
    text = json.dumps(finite(doc), indent=2, default=json_default, allow_nan=False)
    (d / "summary.json").write_text(text + "\n", encoding="utf-8")


def finite(doc, undefined: dict | None = None, path: str = ""):
    """A copy of doc with every non-finite number as None, and the path of each in an "undefined" table
    with a generic reason unless one is given there: the table of the nearest dict that has one (or is a
    profile's summary), else the document's own at the top."""
    if isinstance(doc, np.ndarray):
        doc = doc.tolist()
    if isinstance(doc, dict):
        top = undefined is None and path == ""
        own = dict(doc.get("undefined", {})) if top or "profile" in doc or "undefined" in doc else None
        where, prefix = (own, "") if own is not None else (undefined, path)
        out = {k: finite(v, where, f"{prefix}{k}.") for k, v in doc.items() if k != "undefined"}
        if own:
            out["undefined"] = own
        return out
    if isinstance(doc, list | tuple):
        return [finite(v, undefined, path) for v in doc]
    if isinstance(doc, float | np.floating) and not math.isfinite(doc):
        if undefined is not None:
            undefined.setdefault(path.rstrip("."), NOT_FINITE)
        return None
    return doc


def json_default(o):
    """numpy scalars and arrays as JSON numbers and lists."""
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
