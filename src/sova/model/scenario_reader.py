"""Reading a parsed scenario file into a ``Scenario``: every table checked, every problem with its place.

Arrays of tables (``[[hosts]]``, ``[[vms]]``, ...) are read entry by entry over their ``[defaults]``;
counted entries expand their ``{i}`` names; VMs with host = "auto" or "random" are placed here, seeded.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import numpy as np

from sova.model.initial_placement import place_at_load, span
from sova.model.name_match import NameMatcher
from sova.model.observed_demand import check_observed
from sova.model.power_models import curve_problem
from sova.model.profile_reader import read_profiles
from sova.model.rule_reader import read_scenario_rules
from sova.model.scenario import (
    ControlSpec,
    HostSpec,
    NicSpec,
    OutputSpec,
    Phase,
    ProfileCheck,
    Scenario,
    StorageSpec,
    TrialsSpec,
    VmSpec,
    WorkloadSpec,
    peer_name,
)
from sova.model.scenario_events import read_events
from sova.model.scenario_fields import (
    AUTO_HOSTS,
    CONTROL_FIELDS,
    HOST_FIELDS,
    LIFETIME_KINDS,
    NIC_FIELDS,
    OUTPUT_FIELDS,
    SCENARIO_FIELDS,
    SIMULATOR_FIELDS,
    STORAGE_FIELDS,
    STRUCTURAL_PARAMS,
    TRIALS_FIELDS,
    VM_FIELDS,
    WORKLOAD_FIELDS,
    WORKLOAD_PARAMS,
)
from sova.model.scenario_params import apply_params
from sova.model.schema import REQUIRED, Field, InputError, Reader
from sova.model.slo_reader import read_slos
from sova.model.topology_reader import check_topology_fits, read_topology
from sova.model.trace_sets import absent, vms_per_file

# the top-level tables of a scenario file, as each is written
TABLES = {
    "scenario": "[scenario]",
    "topology": "[topology]",
    "defaults": "[defaults]",
    "hosts": "[[hosts]]",
    "storage": "[[storage]]",
    "vms": "[[vms]]",
    "workloads": "[[workloads]]",
    "profiles": "[profiles.NAME]",
    "control": "[control]",
    "outputs": "[outputs]",
    "simulator": "[simulator]",
    "trials": "[trials]",
    "slos": "[[slos]]",
    "rules": "[[rules]]",
    "events": "[[events]]",
    "sweep": "[sweep]",
    "params": "[params]",
}


def scenario_from_dict(
    raw: dict[str, Any],
    source: str = "<scenario>",
    base_dir: Path | None = None,
    profile_check: ProfileCheck | None = None,
    params: dict[str, Any] | None = None,
) -> Scenario:
    """Validate a parsed scenario (e.g. from TOML) and build the Scenario; raises InputError. `params`
    sets values of its [params] table (``--param NAME=VALUE``)."""
    raw, params = apply_params(dict(raw), source, params) if "params" in raw or params else (raw, {})
    reader = Reader(source)
    for key in raw:
        if key not in TABLES:
            hint = difflib.get_close_matches(key, TABLES, n=1)
            extra = f" (did you mean {TABLES[hint[0]]}?)" if hint else ""
            reader.error(f"[{key}]", f"unknown table{extra}; a scenario has {', '.join(TABLES.values())}")
    head = reader.table(raw.get("scenario", {}), SCENARIO_FIELDS, "[scenario]")
    _check_name(reader, head.get("name"))
    topo = read_topology(reader, raw.get("topology", {}))
    defaults = raw.get("defaults", {})
    if not isinstance(defaults, dict):
        reader.error("[defaults]", "expected a table with optional host and vm sub-tables")
        defaults = {}
    reader.table(defaults, {"host": Field("table", {}), "vm": Field("table", {})}, "[defaults]")

    hosts = _read_hosts(reader, raw.get("hosts", []), defaults.get("host", {}))
    storage = _read_storage(reader, raw.get("storage", []))
    raw_vms = vms_per_file(reader, raw.get("vms", []), base_dir or Path.cwd())
    vms = _read_vms(reader, raw_vms, defaults.get("vm", {}), hosts, storage)
    rules = read_scenario_rules(reader, raw.get("rules", []), vms, hosts)
    if not reader.problems:
        vms = place_at_load(reader, vms, hosts, np.random.default_rng(head["seed"] or 0), rules)
    workloads = _read_workloads(reader, raw.get("workloads", []), vms, base_dir or Path.cwd(), raw.get("storage", []))
    _check_trace_lifetimes(reader, vms, workloads)
    profiles = read_profiles(reader, raw.get("profiles", {}))
    if profile_check is not None:
        for prof in profiles.values():
            profile_check(reader, prof)
    control = ControlSpec(**reader.table(raw.get("control", {}), CONTROL_FIELDS, "[control]"))
    outputs = OutputSpec(**reader.table(raw.get("outputs", {}), OUTPUT_FIELDS, "[outputs]"))
    _check_groups(reader, outputs.groups, NameMatcher([vm.name for vm in vms]))
    slos = read_slos(reader, raw.get("slos", []), [vm.name for vm in vms])
    events = read_events(reader, raw.get("events", []), [host.name for host in hosts], head.get("duration"))
    simulator = reader.table(raw.get("simulator", {}), SIMULATOR_FIELDS, "[simulator]")
    trials = TrialsSpec(**reader.table(raw["trials"], TRIALS_FIELDS, "[trials]")) if "trials" in raw else None
    if trials is not None and head.get("duration") is not None and trials.warmup >= head["duration"]:
        reader.error(
            "[trials].warmup", f"{trials.warmup:g} s leaves nothing of the {head['duration']:g} s run to measure"
        )
    check_topology_fits(reader, topo, len(hosts))

    if head.get("duration") is not None and head.get("step") is not None and head["step"] > head["duration"]:
        reader.error("[scenario].step", f"step {head['step']:g} s is longer than the duration {head['duration']:g} s")
    _check_simulator(reader, simulator, head.get("step"), "[simulator]")
    for prof in profiles.values():
        if prof.simulator:  # the settings it runs with: the scenario's, with the profile's own on top
            _check_simulator(
                reader, {**simulator, **prof.simulator}, head.get("step"), f"[profiles.{prof.name}.simulator]"
            )
    if reader.problems:
        raise InputError(reader.problems)
    return Scenario(
        name=head["name"],
        description=head["description"],
        duration=head["duration"],
        step=head["step"],
        seed=head["seed"],
        topology=topo,
        hosts=tuple(hosts),
        storage=tuple(storage),
        vms=tuple(vms),
        workloads=tuple(workloads),
        profiles=profiles,
        control=control,
        outputs=outputs,
        simulator=simulator,
        trials=trials,
        slos=slos,
        rules=rules,
        events=events,
        params=params,
        warnings=tuple(reader.warnings),
        source=source,
        base_dir=base_dir or Path.cwd(),
    )


def _expand_names(reader: Reader, name: str | None, count: int | None, where: str, start: int | None = 1) -> list[str]:
    if name is None:
        return []
    count, start = 1 if count is None else count, 1 if start is None else start
    if count == 0:
        return []
    if count == 1 and "{i}" not in name:
        return [name]
    if "{i}" not in name:
        reader.error(f"{where}.name", f"with count = {count}, the name must be a pattern containing {{i}}")
        return []
    return [name.replace("{i}", str(i)) for i in range(start, start + count)]


def _unique(reader: Reader, names: list[str], where: str, what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            reader.error(where, f"{what} name {name!r} is used twice")
        seen.add(name)


def _counted_entries(reader: Reader, raw: Any, defaults: Any, fields: dict[str, Field], table: str):
    """Each [[table]] entry, merged over [defaults.<kind>] and checked: (where, values, names it makes)."""
    kind = table.strip("[]").rstrip("s")
    base = reader.table(
        defaults,
        {name: Field(field.kind, None) for name, field in fields.items() if name not in ("name", "start")},
        f"[defaults.{kind}]",
    )
    base = {key: value for key, value in base.items() if value is not None}
    for number, entry in enumerate(reader.entries(raw, table), start=1):
        where = f"{table} #{number}"
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            where += f" ({entry['name']})"
        values = reader.table({**base, **entry} if isinstance(entry, dict) else entry, fields, where)
        yield where, values, _expand_names(reader, values["name"], values["count"], where, values["start"])


COUNTING = frozenset(("name", "count", "start", "files", "block"))  # how an entry names its VMs, not their specs


def _spec_fields(t: dict[str, Any], *skip: str) -> dict[str, Any]:
    """An entry's values that every VM (host) it names takes; computed once per entry, not per VM."""
    left_out = COUNTING.union(skip)
    return {key: value for key, value in t.items() if key not in left_out and value is not None}


def _power_curve(reader: Reader, t: dict[str, Any], where: str) -> tuple[float, ...]:
    """A host's own power curve, given with power_model = custom and only then."""
    given, custom = t["power_curve"], t["power_model"] == "custom"
    if custom and (problem := curve_problem(given)) is not None:
        reader.error(f"{where}.power_curve", problem)
    elif given and not custom:
        reader.error(
            f"{where}.power_curve", f"is read only with power_model = custom (this host's: {t['power_model']})"
        )
    return tuple(float(watts) for watts in given) if custom and curve_problem(given) is None else ()


def _read_hosts(reader: Reader, raw: Any, defaults: Any) -> list[HostSpec]:
    out: list[HostSpec] = []
    for where, values, names in _counted_entries(reader, raw, defaults, HOST_FIELDS, "[[hosts]]"):
        nic = NicSpec(**reader.table(values["nic"], NIC_FIELDS, f"{where}.nic"))
        curve = _power_curve(reader, values, where)
        fields = _spec_fields(values, "nic", "power_curve")
        out += [HostSpec(name=name, nic=nic, power_curve=curve, **fields) for name in names]
        if (
            values["power_idle"] is not None
            and values["power_max"] is not None
            and values["power_max"] < values["power_idle"]
        ):
            reader.error(f"{where}.power_max", "must be at least power_idle")
        if (
            values["memory"] is not None
            and values["dom0_memory"] is not None
            and values["dom0_memory"] >= values["memory"]
        ):
            reader.error(
                f"{where}.dom0_memory",
                f"{values['dom0_memory']:,.0f} MiB leaves nothing of the host's {values['memory']:,.0f} MiB for VMs; "
                "expected less than memory",
            )
        if values["cores"] is not None and values["threads_per_core"] and values["cores"] % values["threads_per_core"]:
            reader.error(f"{where}.cores", f"must be a multiple of threads_per_core ({values['threads_per_core']})")
    if not out:
        reader.error("[[hosts]]", "a scenario needs at least one host")
    _unique(reader, [host.name for host in out], "[[hosts]]", "host")
    return out


_STORAGE_MODELS = {"ssd": (8, 100e-6, 20e-6, 4e9), "disk-array": (8, 8e-3, 0.1e-3, 1.2e9)}


def _read_storage(reader: Reader, raw: Any) -> list[StorageSpec]:
    out = []
    for number, entry in enumerate(reader.entries(raw, "[[storage]]"), start=1):
        values = reader.table(entry, STORAGE_FIELDS, f"[[storage]] #{number}")
        if values["name"] is None:
            continue
        par, acc, seq, bw = _STORAGE_MODELS[values["device"] or "ssd"]
        access = values["access_time"] or acc
        bandwidth = values["bandwidth"] or bw * (par if values["device"] == "disk-array" else 1)
        out.append(
            StorageSpec(
                name=values["name"],
                device=values["device"],
                parallelism=values["parallelism"] or par,
                access_time=access,
                sequential_access_time=values["sequential_access_time"] or seq,
                bandwidth=bandwidth,
                link_speed=values["link_speed"],
                write_access_time=values["write_access_time"] or access,
                write_bandwidth=values["write_bandwidth"] or bandwidth,
                service_cv=values["service_cv"],
                variability=values["variability"],
                variability_time=values["variability_time"],
                stripe=values["stripe"],
            )
        )
    _unique(reader, [server.name for server in out], "[[storage]]", "storage server")
    return out


def _read_vms(
    reader: Reader, raw: Any, defaults: Any, hosts: list[HostSpec], storage: list[StorageSpec]
) -> list[VmSpec]:
    """The VMs as the file gives them; those with host = 'auto', 'first-fit' or 'random' are placed later."""
    host_names = {host_spec.name for host_spec in hosts}
    storage_names = {server.name for server in storage}
    out: list[VmSpec] = []
    for where, values, names in _counted_entries(reader, raw, defaults, VM_FIELDS, "[[vms]]"):
        if values["host"] not in (None, *AUTO_HOSTS) and values["host"] not in host_names:
            reader.error(
                f"{where}.host",
                f"unknown host {values['host']!r}; expected 'auto', 'first-fit', 'random' or one of {_few(host_names)}",
            )
        if values["storage"] and values["storage"] not in storage_names:
            reader.error(
                f"{where}.storage", f"unknown storage server {values['storage']!r}; expected {_few(storage_names)}"
            )
        if values["nic"] == "vf" and values["host"] in host_names:
            host = next(host_spec for host_spec in hosts if host_spec.name == values["host"])
            if not host.nic.sriov or host.nic.max_vfs == 0:
                reader.error(f"{where}.nic", f"host {host.name!r} has no SR-IOV VFs; expected 'vnic'")
        _check_lifetime(reader, where, values)
        if values["block"] not in (None, "1/1") and not values["files"]:
            reader.error(
                f"{where}.block", f"{values['block']!r} is read only with files (one VM per trace file); expected files"
            )
        fields = _spec_fields(values)
        out += [VmSpec(name=name, **fields) for name in names]
    _unique(reader, [vm.name for vm in out], "[[vms]]", "VM")
    return out


def _check_simulator(reader: Reader, simulator: dict[str, Any], step: float | None, where: str) -> None:
    """What the keys' ranges alone cannot say of the [simulator] settings a run will use (the scenario's, or
    a profile's merged over them): the storage subsystem's epochs tile the fabric's step."""
    storage_step = simulator.get("storage_step") or 0.0
    if not storage_step or step is None:
        return
    epochs = step / storage_step
    if storage_step > step or abs(epochs - round(epochs)) > 1e-6 * epochs:
        reader.error(
            f"{where}.storage_step",
            f"{storage_step:g} s does not divide the step ({step:g} s) into whole epochs; expected e.g. "
            f"{step / max(1, round(epochs)):g} s",
        )


def _check_lifetime(reader: Reader, where: str, t: dict) -> None:
    """A later arrival is placed when it comes (host 'auto') or starts on its named host; 'random' places
    at load, which an arrival cannot take; a departure comes after the arrival."""
    if (t["arrive"] > 0 or t["from_trace"]) and t["host"] == "random":
        reader.error(
            f"{where}.host",
            "'random' places a VM when the scenario loads, but this one arrives later; expected 'auto' "
            "(the admission policy places it when it comes) or a host name",
        )
    if t["depart"] and t["depart"] <= t["arrive"]:
        reader.error(
            f"{where}.depart", f"{t['depart']:g} s is not after arrive = {t['arrive']:g} s; expected a later time"
        )


def _check_trace_lifetimes(reader: Reader, vms: list[VmSpec], workloads: list[WorkloadSpec]) -> None:
    """A VM sized by its trace needs a trace that sizes VMs (azure, opendc, bitbrains) and names it."""
    matching = NameMatcher([vm.name for vm in vms])
    covered = {name for workload in workloads if workload.kind in LIFETIME_KINDS for name in matching(workload.vm)}
    lost = [vm.name for vm in vms if vm.from_trace and vm.name not in covered]
    if lost:
        reader.error(
            f"[[vms]] ({lost[0]}).from_trace",
            f"{span(lost)} take their size from a trace, but no azure, opendc or bitbrains workload names them; "
            "expected one whose vm pattern matches them",
        )


def _read_workloads(
    reader: Reader, raw: Any, vms: list[VmSpec], base_dir: Path, storage_raw: Any
) -> list[WorkloadSpec]:
    names = [vm_spec.name for vm_spec in vms]
    name_set = set(names)
    matching = NameMatcher(names)
    out = []
    has_storage = isinstance(storage_raw, list) and len(storage_raw) > 0
    for number, entry in enumerate(reader.entries(raw, "[[workloads]]"), start=1):
        where = f"[[workloads]] #{number}"
        if not isinstance(entry, dict):
            reader.error(where, "expected a table")
            continue
        kind = entry.get("kind")
        if isinstance(kind, str) and kind in WORKLOAD_PARAMS:  # a list or table there is named by r.table
            params_spec = WORKLOAD_PARAMS[kind]
            head = reader.table(entry, WORKLOAD_FIELDS, where, extra_ok=(*params_spec, "phases"))
        else:  # which keys are right depends on the kind: name the kind alone, not every key it would make wrong
            head = reader.table(entry, WORKLOAD_FIELDS, where, extra_ok=tuple(entry))
        if head["kind"] is None:
            continue
        if head["kind"] in ("fio", "filebench", "bitbrains", "block-trace", "observed") and not has_storage:
            reader.error(f"{where}.kind", f"{head['kind']} does disk IO; expected a [[storage]] server in the scenario")
        params = reader.table({name: value for name, value in entry.items() if name in params_spec}, params_spec, where)
        vm = head["vm"]
        if vm is not None and not matching(vm):
            reader.error(f"{where}.vm", f"matches no VM; expected a VM name or pattern ({_few(name_set)})")
        for key in ("peer", "client"):
            if key not in params or params[key] is None:
                continue
            for own in matching(vm or ""):
                other = peer_name(params[key], own)
                if other != "external" and other not in name_set:
                    reader.error(
                        f"{where}.{key}",
                        f"unknown VM {other!r} (for {own}); expected 'external', a VM name, "
                        "or a pattern with {i} standing for the workload VM's own number",
                    )
                    break
                if other == own:
                    reader.warn(
                        f"{where}.{key}", f"is {own} itself (of {vm!r}): its traffic to itself crosses no network"
                    )
                    break
        if head["kind"] == "web":
            _check_tiers(reader, where, params, matching(vm or ""), matching)
        if params.get("file"):
            params["file"] = _resolve_trace(reader, params["file"], base_dir, f"{where}.file")
            if head["kind"] == "observed":
                check_observed(reader, where, params, matching(vm or ""))
        phases = []
        raw_phases = entry.get("phases", [])
        for phase_number, raw_phase in enumerate(reader.entries(raw_phases, f"{where}.phases"), start=1):
            pwhere = f"{where}.phases #{phase_number}"
            changeable = {name: field for name, field in params_spec.items() if name not in STRUCTURAL_PARAMS}
            fields = {"at": Field("duration", REQUIRED, "when the phase starts", lo=0)}
            fields |= {
                name: Field(field.kind, None, field.doc, field.choices, field.lo, field.hi, field.lo_open)
                for name, field in changeable.items()
            }
            values = reader.table(raw_phase, fields, pwhere)
            phases.append(
                Phase(
                    at=values.pop("at") or 0.0,
                    params={name: value for name, value in values.items() if value is not None},
                )
            )
        ats = [phase.at for phase in phases]
        if ats != sorted(ats):
            reader.error(f"{where}.phases", "phases must be in increasing order of 'at'")
        out.append(
            WorkloadSpec(
                kind=head["kind"],
                vm=vm or "",
                params=params,
                phases=tuple(phases),
                stagger=head["stagger"],
                where=f"{reader.source}: {where}",
                memory_used=head["memory_used"],
            )
        )
    return out


def _check_tiers(reader: Reader, where: str, params: dict, clients: list[str], matching: NameMatcher) -> None:
    """A web workload's web and cache patterns must name VMs (for every client), and not the client."""
    web, cache = params.get("web"), params.get("cache")
    for own in clients if web is not None else []:
        webs = matching(peer_name(web, own))
        if not webs:
            reader.error(f"{where}.web", f"matches no VM (for client {own}); expected a VM name, a glob or 'web{{i}}'")
            break
        if own in webs:
            reader.error(f"{where}.web", f"includes the client {own} itself; expected the web tier's VMs")
            break
    if cache and not matching(cache):
        reader.error(f"{where}.cache", "matches no VM; expected the cache tier's VMs (a name or glob) or ''")


def _check_groups(reader: Reader, groups: dict, matching: NameMatcher) -> None:
    for label, pattern in groups.items():
        if not isinstance(pattern, str):
            reader.error(f"[outputs].groups.{label}", f"expected a VM name or pattern like 'web*', got {pattern!r}")
        elif not matching(pattern):
            reader.error(f"[outputs].groups.{label}", f"{pattern!r} matches no VM of the scenario")


def _resolve_trace(reader: Reader, value: str, base_dir: Path, where: str) -> str:
    archive, _, member = value.partition(".tar.gz:")
    path_text = archive + ".tar.gz" if member else value
    path = Path(path_text)
    if not path.is_absolute():
        path = (base_dir / path).resolve()
    if not path.exists():
        absent(reader, where, path)
    return f"{path}:{member}" if member else str(path)


def _few(names: set[str] | list[str], n: int = 8) -> str:
    items = sorted(names)
    return ", ".join(items[:n]) + (", ..." if len(items) > n else "") if items else "(none defined)"


def _check_name(reader: Reader, name: object) -> None:
    """The scenario's name is the default result directory (results/NAME): a plain file name, nothing else."""
    if not isinstance(name, str):
        return
    if name.strip() in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name or name.startswith("-"):
        reader.error(
            "[scenario].name",
            f"{name!r} cannot name the result directory results/NAME: expected a plain name, not empty, "
            "'.' or '..', without '/' or '\\', not starting with '-'",
        )
