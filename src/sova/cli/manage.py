"""``sova manage``: the MAPE-K loop against real hosts through libvirt, on the wall clock."""

from __future__ import annotations

from pathlib import Path

from sova.cli.common import described, number, out, pairs, toml_value, warn
from sova.model.schema import InputError, Problem


def add_parser(sub) -> None:
    from sova.control.manage import BUILTIN_PROFILES

    m = sub.add_parser(
        "manage",
        help="run the MAPE-K loop against real hosts through libvirt",
        **described(
            "Observe real hosts every second and run a profile's policies on the wall clock, with the same "
            "executor, safety rails and audit log as in simulation. Hosts come from --host NAME=URI "
            "(repeatable), a hosts file, or a running lab (--lab). Stop with Ctrl-C.",
            [
                "sova manage --lab /var/lib/sova-lab --profile sova --mode approve",
                "sova manage --host node1=qemu+ssh://root@node1/system --host node2=qemu+ssh://root@node2/system",
                "sova manage --hosts-file hosts.toml --mode dry-run --control hold_down=120",
            ],
            "profiles: "
            + ", ".join(f"{k} ({', '.join(v) or 'no policy'})" for k, v in BUILTIN_PROFILES.items())
            + "\nURIs: qemu+tls://node1/system or qemu+ssh://root@node1/system (see docs/libvirt.md)",
        ),
    )
    m.add_argument(
        "--driver", choices=["libvirt"], default="libvirt", help="the driver (only libvirt manages real hosts)"
    )
    m.add_argument("--host", action="append", default=[], metavar="NAME=URI", help="a host and its libvirt URI")
    m.add_argument(
        "--hosts-file",
        type=Path,
        default=None,
        metavar="FILE.toml",
        help="hosts, URIs and SR-IOV settings (docs/libvirt.md)",
    )
    m.add_argument("--lab", type=Path, default=None, metavar="DIR", help="manage the lab in DIR (hosts, VFs, agents)")
    add_profile_arguments(m)
    m.add_argument(
        "--duration",
        type=number("a positive number of seconds", lo=0, lo_open=True),
        default=None,
        metavar="SECONDS",
        help="stop after this long (default: never)",
    )
    m.add_argument("--audit", type=Path, default=None, metavar="FILE.jsonl", help="append every audit entry here")
    m.add_argument(
        "--slos",
        type=Path,
        default=None,
        metavar="FILE.toml",
        help="storage SLOs to start with: [[slos]] entries as in a scenario (profile see; docs/storage-slo.md)",
    )
    add_rules_argument(m)
    m.add_argument(
        "--control-socket",
        type=Path,
        default=None,
        metavar="PATH",
        help="where `sova slo` and `sova host --socket` reach this manage (default: the user's runtime directory)",
    )


def command(args) -> int:
    import json
    from dataclasses import asdict

    from sova.control.manage import manage
    from sova.drivers.libvirt_driver import LibvirtDriver
    from sova.model.rule_reader import load_rules_file
    from sova.model.scenario import TopologySpec
    from sova.plan.base import controllers

    hosts, options, topology = {}, {}, None
    if args.lab is not None:
        from sova.lab.lab import driver_settings, lab_topology

        hosts, options = driver_settings(args.lab)
        topology = lab_topology()
    if args.hosts_file is not None:
        from sova.drivers.flow_counters import FlowCounters
        from sova.drivers.hosts_file import load_hosts_file

        cfg = load_hosts_file(args.hosts_file)
        for warning in cfg.warnings:
            warn(str(warning))
        hosts.update(cfg.hosts)
        options.update(sriov=cfg.sriov, migration_uri=cfg.migration_uri, nic_bandwidth=cfg.nic_bandwidth)
        options["shared_disks"] = cfg.shared_storage
        if cfg.flows:
            options["flows"] = FlowCounters(cfg.flows)
        topology = cfg.topology or topology
    hosts.update(pairs(args.host, "--host", "NAME=URI, e.g. node1=qemu+ssh://root@node1/system"))
    policies, control, profile = profile_and_rails(args, "sova manage")
    controlled = bool(controllers(policies))
    if args.slos is not None and not controlled:
        raise InputError([Problem("--slos", f"profile {args.profile} holds no storage SLO; expected --profile see")])
    slo_entries = _read_slo_file(args.slos) if args.slos else None  # before connecting: bad input fails at once
    rules = load_rules_file(args.rules, list(hosts)) if args.rules else None
    audit = _open_audit(args.audit) if args.audit else None
    driver = LibvirtDriver(hosts, **options)
    service = None
    try:
        driver.connect()
        service = _control_service(driver, controlled, slo_entries, args.slos, args.control_socket, profile, control)
    except BaseException:
        driver.close()
        if audit is not None:
            audit.close()
        raise

    def on_entry(e) -> None:
        out.print(f"{e.time:8.1f}s  {e.event:9} {e.action:40} {e.status:9} {e.message or e.reason}", markup=False)
        if audit is not None:
            audit.write(json.dumps(asdict(e), default=float) + "\n")
            audit.flush()

    def ask(pid: int, lines: list[str]) -> bool:
        out.print(f"plan {pid}:", markup=False)
        for line in lines:
            out.print(f"  {line}", markup=False, soft_wrap=True)
        return input("approve? [y/N] ").strip().lower() in ("y", "yes")

    out.print(f"managing {', '.join(hosts)} with profile {args.profile} ({args.mode}); Ctrl-C stops", markup=False)
    try:
        manage(
            driver,
            policies,
            control,
            args.mode,
            args.duration,
            on_entry=on_entry,
            ask=ask,
            slos=service,
            rules=rules,
            topology=topology or TopologySpec(),  # unknown: one switch, each host's port its own NIC
        )
    except KeyboardInterrupt:
        out.print("stopped", markup=False)
    finally:
        if service is not None:
            service.close()
        driver.close()
        if audit is not None:
            audit.close()
    return 0


def add_rules_argument(parser) -> None:
    """--rules FILE.toml: the operator's placement rules (`sova manage`, `sova manager`)."""
    parser.add_argument(
        "--rules",
        type=Path,
        default=None,
        metavar="FILE.toml",
        help="placement rules: [[rules]] entries as in a scenario (docs/operations.md)",
    )


def add_profile_arguments(parser, scenario: bool = False, default: str = "sova", mode: bool = True) -> None:
    """--profile, --mode, --param and --control: which policies run, and under which rails (and with
    `scenario`, --scenario: profiles and rails taken from a scenario file; without `mode`, no --mode)."""
    from sova.control.manage import BUILTIN_PROFILES

    if scenario:
        parser.add_argument(
            "--scenario",
            type=Path,
            default=None,
            metavar="FILE.toml",
            help="take --profile from this scenario's [profiles], and the rails from its [control]",
        )
        parser.add_argument(
            "--profile",
            default=default,
            help=f"policies to run: {', '.join(BUILTIN_PROFILES)} or a scenario's (default {default})",
        )
    else:
        parser.add_argument(
            "--profile", default=default, choices=sorted(BUILTIN_PROFILES), help=f"policies to run (default {default})"
        )
    if mode:
        parser.add_argument(
            "--mode", default="auto", choices=["auto", "approve", "dry-run"], help="apply, ask, or only log plans"
        )
    parser.add_argument("--param", action="append", default=[], metavar="POLICY.KEY=VALUE", help="a policy parameter")
    parser.add_argument(
        "--control", action="append", default=[], metavar="KEY=VALUE", help="an executor rail, e.g. hold_down=120"
    )


def profile_and_rails(args, where: str):
    """The profile's policies with their --param values, the executor's rails from --control, and the profile
    itself (as a snapshot exports it), each checked as a scenario's [profiles] and [control] tables are (the
    same keys, units, ranges, errors)."""
    import dataclasses

    from sova.control.manage import BUILTIN_PROFILES
    from sova.control.profiles import check_profile
    from sova.model.scenario import ControlSpec, ProfileSpec
    from sova.model.scenario_fields import CONTROL_FIELDS
    from sova.model.schema import Reader

    params: dict[str, dict] = {}
    for key, val in pairs(args.param, "--param", "POLICY.KEY=VALUE, e.g. dsriov-vlm.alpha=0.8", dotted=True):
        pol, _, k = key.partition(".")
        params.setdefault(pol, {})[k] = toml_value(val)
    known, base_rails = dict(BUILTIN_PROFILES), ControlSpec()
    scenario_profiles = {}
    if getattr(args, "scenario", None) is not None:
        from sova.model.sweep import load_scenario

        scenario = load_scenario(args.scenario)
        scenario_profiles, base_rails = scenario.profiles, scenario.control
    if args.profile in scenario_profiles:
        spec = scenario_profiles[args.profile]
        merged = {name: {**spec.params.get(name, {}), **params.get(name, {})} for name in {*spec.params, *params}}
        profile = ProfileSpec(args.profile, spec.policies, getattr(args, "mode", "auto"), merged)
    elif args.profile in known:
        profile = ProfileSpec(args.profile, known[args.profile], getattr(args, "mode", "auto"), params)
    else:
        choices = ", ".join(dict.fromkeys([*known, *scenario_profiles]))  # a scenario may reuse a built-in name
        raise InputError([Problem("--profile", f"unknown profile {args.profile!r}; expected one of {choices}")])
    reader = Reader(where)
    policies = check_profile(reader, profile, params_at="--param {policy}")
    if reader.problems:
        raise InputError(reader.problems)
    rails = {k: toml_value(v) for k, v in pairs(args.control, "--control", "KEY=VALUE, e.g. hold_down=120")}
    reader = Reader(where)
    given = reader.table(rails, CONTROL_FIELDS, "--control")
    if reader.problems:
        raise InputError(reader.problems)
    control = dataclasses.replace(base_rails, **{k: v for k, v in given.items() if k in rails})
    return policies, control, profile


def _read_slo_file(path: Path) -> list:
    """The [[slos]] entries of a TOML file (checked against the VMs once the hosts are reached)."""
    from sova.model.schema import read_toml

    raw = read_toml(path, "a TOML file of [[slos]] entries")
    entries = raw.get("slos", [])
    unknown = sorted(set(raw) - {"slos"})
    if unknown or not isinstance(entries, list):
        raise InputError([Problem(f"--slos {path}", "expected only [[slos]] entries (docs/storage-slo.md)")])
    return entries


def _control_service(
    driver, controlled: bool, entries: list | None, path_given: Path | None, socket_path, profile, control
):
    """The control socket: drains (`sova host ... --socket`) and cluster snapshots (`sova snapshot export
    --socket`, of `profile` under the rails `control`) always, and with profile see the tenants' SLO book over
    the hosts' VMs, filled from --slos. Without see and without --control-socket, a default socket another
    manage holds only means this one serves none (said once)."""
    import dataclasses

    from sova.cli.snapshot import profile_table
    from sova.control.host_control import HostControl
    from sova.control.slo_service import SloService, default_socket
    from sova.control.snapshot_service import SnapshotService
    from sova.model.schema import Reader
    from sova.model.slo_reader import read_slos, slo_book
    from sova.model.storage_slo import SloError

    book = None
    if controlled:
        vms = list(driver.observe().vms)
        slos = ()
        if entries:
            reader = Reader(f"--slos {path_given}")
            slos = read_slos(reader, entries, vms)
            if reader.problems:
                raise InputError(reader.problems)
        book = slo_book(vms, slos)
    snapshots = SnapshotService({"name": profile.name, **profile_table(profile)}, dataclasses.asdict(control), book)
    service = SloService(book, HostControl(), snapshots)
    where = socket_path or default_socket()
    try:
        service.listen(where)
    except (SloError, OSError) as exc:
        if controlled or socket_path is not None:
            raise InputError([Problem(f"--control-socket {where}", str(exc))]) from None
        out.print(f"no control socket ({exc}): `sova host drain --socket` cannot reach this manage", markup=False)
        return None
    words = "`sova host drain|release HOST`, `sova snapshot export`, `sova what-if`"
    words = f"`sova slo set|get VM`, {words}" if controlled else words
    out.print(f"control: {words} --socket {where}", markup=False)
    return service


def _open_audit(path: Path):
    """The audit file, opened to append (an existing log is never truncated); a path that cannot be
    written is an input error."""
    try:
        return path.open("a", encoding="utf-8")
    except OSError as exc:
        raise InputError([Problem(f"--audit {path}", f"cannot be appended to: {exc.strerror or exc}")]) from None
