"""Parameter sweeps: one scenario file, run once per value of one key (request rate, number of VMs, ...).

    [sweep]
    table = "workloads"        # workloads | vms | hosts | topology | simulator
    kind = "httperf"           # workloads only: entries of this kind
    match = "web*"             # workloads: the vm pattern; vms/hosts: the name pattern
    key = "rate"
    values = [1000, 1300, 1600]

Each value gives a complete scenario, validated as any other (problems name the value they came from).
``[[sweep]]`` (an array) changes several keys in lockstep: all entries have as many values, and run k
sets every entry's k-th value (e.g. busy and idle VM counts growing together); the first names the axis.
"""

from __future__ import annotations

import copy
import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sova.model.scenario import ProfileCheck, Scenario
from sova.model.scenario_reader import scenario_from_dict
from sova.model.schema import REQUIRED, Field, InputError, Problem, Reader, read_toml

SWEEP_TABLES = ("workloads", "vms", "hosts", "storage", "slos", "topology", "simulator", "params")
ENTRY_TABLES = {"workloads": "vm", "vms": "name", "hosts": "name", "storage": "name", "slos": "vm"}  # key naming each
SWEEP_FIELDS = {
    "table": Field("str", REQUIRED, "where the swept key lives (params: a [params] name)", choices=SWEEP_TABLES),
    "key": Field("str", REQUIRED, "the key to set, e.g. rate, page, duty or count"),
    "values": Field("any", REQUIRED, "the values to run, a non-empty list"),
    "match": Field("str", "*", "workloads: entries whose vm matches; vms/hosts: entries whose name matches"),
    "kind": Field("str", "", "workloads: only entries of this kind"),
    "label": Field("str", "", "axis label in plots (default: the key)"),
}


@dataclass(frozen=True)
class Sweep:
    table: str
    key: str
    values: tuple[Any, ...]
    match: str = "*"
    kind: str = ""
    label: str = ""
    lockstep: tuple[Sweep, ...] = ()

    @property
    def axis(self) -> str:
        return self.label or self.key

    def describe(self, k: int) -> str:
        """Run k's values, lockstep keys included: "link_speed = 100Mbps, tor_oversubscription = 4"."""
        return ", ".join(f"{x.key} = {x.values[k]}" for x in (self, *self.lockstep))


def load_runs(
    path: str | Path, profile_check: ProfileCheck | None = None, params: dict[str, Any] | None = None
) -> tuple[Sweep | None, list[Scenario]]:
    """The scenario file's runs: [the scenario] without a [sweep], one scenario per value with one;
    `params` sets [params] values (``--param NAME=VALUE``)."""
    path = Path(path)
    raw = read_toml(path, "a scenario .toml file")
    sweep_raw = raw.pop("sweep", None)
    if sweep_raw is None:
        return None, [scenario_from_dict(raw, str(path), path.parent, profile_check, params)]
    reader = Reader(str(path))
    entries = sweep_raw if isinstance(sweep_raw, list) else [sweep_raw]
    parts = [
        _read_sweep(reader, e, raw, f"[[sweep]] #{n}" if isinstance(sweep_raw, list) else "[sweep]")
        for n, e in enumerate(entries, start=1)
    ]
    if any(len(p.values) != len(parts[0].values) for p in parts):
        raise InputError([Problem(f"{path}: [[sweep]]", "every entry must have as many values as the first")])
    runs_values = list(zip(*(p.values for p in parts), strict=True))  # what each run sets, lockstep keys too
    twice = [v for k, v in enumerate(runs_values) if v in runs_values[:k]]
    if twice:
        where = "[[sweep]] #1.values" if isinstance(sweep_raw, list) else "[sweep].values"
        shown = (
            repr(twice[0][0])
            if len(parts) == 1
            else ", ".join(f"{p.key} = {v!r}" for p, v in zip(parts, twice[0], strict=True))
        )
        raise InputError(
            [Problem(f"{path}: {where}", f"{shown} is given twice; expected each value once (each is a run)")]
        )
    sweep = Sweep(**{**parts[0].__dict__, "lockstep": tuple(parts[1:])})
    runs = []
    for k, value in enumerate(sweep.values):
        variant = copy.deepcopy(raw)
        for part in parts:
            _apply(variant, part, part.values[k])
        source = f"{path} [sweep {sweep.key} = {value!r}]"
        runs.append(scenario_from_dict(variant, source, path.parent, profile_check, params))
    return sweep, runs


def _read_sweep(reader: Reader, raw: Any, scenario: dict, where: str) -> Sweep:
    t = reader.table(raw, SWEEP_FIELDS, where)
    values = t["values"]
    if t["values"] is not None and (not isinstance(values, list) or not values):
        reader.error(f"{where}.values", f"expected a non-empty list of values, got {values!r}")
    declared = scenario.get("params", {})
    if t["table"] == "params" and t["key"] is not None and (not isinstance(declared, dict) or t["key"] not in declared):
        reader.error(f"{where}.key", f"the scenario's [params] declares no {t['key']!r}; expected one of its names")
    if not reader.problems and t["table"] in ENTRY_TABLES:
        field = ENTRY_TABLES[t["table"]]
        entries = scenario.get(t["table"], [])
        hits = [e for e in entries if isinstance(e, dict) and _matches(e, field, t["match"], t["kind"])]
        if not hits:
            what = f" of kind {t['kind']!r}" if t["kind"] else ""
            reader.error(f"{where}.match", f"no [[{t['table']}]] entry{what} has a {field} matching {t['match']!r}")
    if reader.problems:
        raise InputError(reader.problems)
    return Sweep(t["table"], t["key"], tuple(values), t["match"], t["kind"], t["label"])


def _matches(entry: dict, field: str, pattern: str, kind: str) -> bool:
    name = entry.get(field)
    return isinstance(name, str) and fnmatch.fnmatch(name, pattern) and (not kind or entry.get("kind") == kind)


def _apply(raw: dict, sweep: Sweep, value: Any) -> None:
    if sweep.table in ("topology", "simulator", "params"):
        raw.setdefault(sweep.table, {})[sweep.key] = value
        return
    field = ENTRY_TABLES[sweep.table]
    for entry in raw.get(sweep.table, []):
        if isinstance(entry, dict) and _matches(entry, field, sweep.match, sweep.kind):
            entry[sweep.key] = value


def load_scenario(
    path: str | Path, profile_check: ProfileCheck | None = None, params: dict[str, Any] | None = None
) -> Scenario:
    """Read and validate a scenario file without a [sweep]; raises InputError listing every problem.

    profile_check, given by a higher floor that knows the policies, checks each profile's policies
    and parameters into the same list of problems.
    """
    sweep, runs = load_runs(path, profile_check, params)
    if sweep is not None:
        raise InputError([Problem(f"{path}: [sweep]", "this file describes a sweep; run it with `sova run`")])
    return runs[0]
