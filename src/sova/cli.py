"""The ``sova`` command: run and validate scenarios, list policies.

Exit status: 0 success, 1 the run failed, 2 bad input (scenario, arguments), 130 interrupted.
Errors are printed as one line per problem with its location; never a traceback for bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from sova import __version__
from sova.drivers.libvirt_driver import DriverError
from sova.lab.errors import LabError
from sova.model.schema import InputError, Problem
from sova.plan.placement.problem import PlacementError
from sova.sim.engine import SimError
from sova.sim.traces import TraceError

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)

EPILOG = """examples:
  sova validate scenarios/quickstart.toml
  sova run scenarios/quickstart.toml --out results/quickstart
  sova run scenarios/quickstart.toml --profile default --profile threshold --seed 3
  sova policies
  sova lab up --hosts 2 --vms-per-host 2        (root: a real libvirt lab on this machine)
  sova manage --lab /var/lib/sova-lab --profile sova
  sova lab down

docs: docs/scenario-format.md (scenario files), docs/outputs.md (result files), docs/simulator.md (the model)"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sova",
        description="Sova: an autonomic resource manager for virtualized data centers, with a built-in "
        "data-center simulator. Runs MAPE-K policies (VF scheduling, live migration, placement, ...) against "
        "simulated or real hosts.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"sova {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser(
        "run",
        help="run a scenario on the simulator, once per profile",
        description="Run SCENARIO on the built-in simulator once per profile, on the same workload and seed, "
        "and write summary.json, metrics-PROFILE.csv, audit-PROFILE.jsonl, PNG plots and report.html to --out. "
        "The directory is written all at once at the end: an interrupted run leaves nothing behind.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("scenario", type=Path, metavar="SCENARIO.toml", help="scenario file")
    run.add_argument("--out", type=Path, default=None, help="result directory (default: results/SCENARIO-NAME)")
    run.add_argument(
        "--profile",
        action="append",
        default=None,
        metavar="NAME",
        help="run only this profile (repeatable; default: every profile of the scenario)",
    )
    run.add_argument("--seed", type=int, default=None, help="override the scenario's random seed")
    run.add_argument("--force", action="store_true", help="replace an existing result directory")
    run.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="scenarios with [trials]: trials run in N processes (default: one per core)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress bar and no summary table")

    val = sub.add_parser(
        "validate",
        help="check a scenario file and explain every error",
        description="Check SCENARIO: TOML syntax, every table and key, units, ranges, names that refer to "
        "hosts/VMs/storage, trace files, policies and their parameters. Prints every problem with its "
        "location (file, table, key) and what was expected.",
    )
    val.add_argument("scenario", type=Path, metavar="SCENARIO.toml", help="scenario file")

    sub.add_parser(
        "policies",
        help="list the registered policies and their parameters",
        description="List every policy a profile can name, with its loop, period and parameters.",
    )
    _place_parser(sub)
    _lab_parser(sub)
    _manage_parser(sub)
    return p


def _place_parser(sub) -> None:
    from sova.control.place import algorithms

    pl = sub.add_parser(
        "place",
        help="what a placement algorithm would do with a scenario (nothing is migrated)",
        description="Measure SCENARIO for --window simulated seconds with no policy, run a Virtue placement "
        "algorithm on what was measured, and print the objective (the most utilized CPU or link) before and "
        "after, the peak of each resource kind, the moves and the optimizer's runtime. See docs/placement.md.",
    )
    pl.add_argument("scenario", type=Path, metavar="SCENARIO.toml", help="scenario file (needs a tree [topology])")
    pl.add_argument("--algorithm", required=True, choices=algorithms(), help="the placement algorithm")
    pl.add_argument("--window", type=float, default=60.0, metavar="SECONDS", help="measurement window (default 60)")
    pl.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="an algorithm parameter")


def _lab_parser(sub) -> None:
    lab = sub.add_parser(
        "lab",
        help="a real multi-host libvirt lab on this machine (root)",
        description="Bring up, inspect, load and tear down a lab of real libvirtd hosts (one per network, mount and "
        "cgroup namespace) running real QEMU guests (TCG) with Sova's guest agent. VFs are emulated: a "
        "rate-limited virtio NIC stands in for an SR-IOV VF. See docs/lab.md.",
    )
    lab_sub = lab.add_subparsers(dest="lab_command", metavar="ACTION", required=True)
    up = lab_sub.add_parser("up", help="install what is missing, create the hosts, boot the VMs")
    up.add_argument("--hosts", type=int, default=2, metavar="N", help="number of hosts (1-16, default 2)")
    up.add_argument("--vms-per-host", type=int, default=2, metavar="M", help="VMs booted on each host (default 2)")
    up.add_argument("--no-install", action="store_true", help="do not apt-get install missing packages; stop instead")
    for name, text in (
        ("status", "hosts, VMs and where each runs"),
        ("down", "stop everything the lab started and remove its namespaces, cgroups and files"),
    ):
        lab_sub.add_parser(name, help=text, description=text)
    load = lab_sub.add_parser(
        "load",
        help="set the load a VM runs",
        description="Replace the load VM runs (duty cycles of 10 s, as the papers' lookbusy and netperf): "
        "cpu=PCT busy-loops PCT %% of the time, net=VM2:PCT streams to VM2 PCT %% of the time, disk=IOPS "
        "reads 4 KiB blocks with O_DIRECT at that rate (or disk=max). No setting: idle.",
    )
    load.add_argument("vm", metavar="VM")
    load.add_argument("settings", nargs="*", metavar="KEY=VALUE")
    for p in (up, load, *[lab_sub.choices[n] for n in ("status", "down")]):
        p.add_argument("--dir", type=Path, default=None, help="lab directory (default /var/lib/sova-lab)")


def _manage_parser(sub) -> None:
    from sova.control.manage import BUILTIN_PROFILES

    m = sub.add_parser(
        "manage",
        help="run the MAPE-K loop against real hosts through libvirt",
        description="Observe real hosts every second and run a profile's policies on the wall clock, with the "
        "same executor, safety rails and audit log as in simulation. Hosts come from --host NAME=URI "
        "(repeatable) or from a running lab (--lab). Stop with Ctrl-C.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="profiles: "
        + ", ".join(f"{k} ({', '.join(v) or 'no policy'})" for k, v in BUILTIN_PROFILES.items())
        + "\nURIs: qemu+tls://node1/system or qemu+ssh://root@node1/system (see docs/libvirt.md)",
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
    m.add_argument("--profile", default="sova", choices=sorted(BUILTIN_PROFILES), help="policies to run (default sova)")
    m.add_argument(
        "--mode", default="auto", choices=["auto", "approve", "dry-run"], help="apply, ask, or only log plans"
    )
    m.add_argument("--param", action="append", default=[], metavar="POLICY.KEY=VALUE", help="a policy parameter")
    m.add_argument(
        "--control", action="append", default=[], metavar="KEY=VALUE", help="an executor rail, e.g. hold_down=120"
    )
    m.add_argument(
        "--duration", type=float, default=None, metavar="SECONDS", help="stop after this long (default: never)"
    )
    m.add_argument("--audit", type=Path, default=None, metavar="FILE.jsonl", help="append every audit entry here")


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "validate":
            return _validate(args)
        if args.command == "run":
            return _run(args)
        if args.command == "policies":
            return _policies()
        if args.command == "place":
            return _place(args)
        if args.command == "lab":
            return _lab(args)
        if args.command == "manage":
            return _manage(args)
    except InputError as exc:
        _print_problems(exc.problems)
        return 2
    except (TraceError, SimError, LabError, DriverError, PlacementError) as exc:
        _error(str(exc))
        return 2
    except KeyboardInterrupt:
        err.print("interrupted; nothing was written", markup=False)
        return 130
    return 2


def _error(text: str) -> None:
    """One error line, verbatim: scenario locations contain brackets that must not be read as markup."""
    err.print("error: " + text, markup=False, highlight=False, soft_wrap=True, style="red")


def _print_problems(problems: list[Problem]) -> None:
    for p in problems:
        _error(str(p))
    err.print(f"{len(problems)} problem(s) found; nothing was run", markup=False, soft_wrap=True)


def _load(path: Path):
    """(sweep or None, scenarios): one scenario, or one per value of the file's [sweep]."""
    from sova.control.profiles import check_profile
    from sova.model.sweep import load_runs

    return load_runs(path, profile_check=check_profile)


def _validate(args) -> int:
    sweep, runs = _load(args.scenario)
    from sova.sim.engine import Simulator

    for s in runs:
        Simulator(s)  # loads traces and builds the fabric: every remaining input error shows here
    s = runs[0]
    swept = f", a sweep of {sweep.key} over {len(runs)} values" if sweep else ""
    out.print(
        f"ok {args.scenario}: {s.name!r}, {len(s.hosts)} hosts, {len(s.vms)} VMs, "
        f"{len(s.workloads)} workloads, profiles: {', '.join(s.profiles)}{swept}",
        markup=False,
        soft_wrap=True,
    )
    return 0


def _run(args) -> int:
    from dataclasses import replace

    from sova.control.experiment import run_scenario, run_sweep
    from sova.report.writer import OutputError, write_results, write_sweep_results

    sweep, runs = _load(args.scenario)
    first = runs[0]
    if args.profile:
        unknown = [p for p in args.profile if p not in first.profiles]
        if unknown:
            raise InputError(
                [
                    Problem(f"--profile {u}", f"no such profile; the scenario defines {', '.join(first.profiles)}")
                    for u in unknown
                ]
            )
    if args.seed is not None and args.seed < 0:
        raise InputError([Problem("--seed", f"expected a non-negative integer, got {args.seed}")])
    dest = args.out or Path("results") / first.name
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())) and not args.force:
        raise InputError([Problem(f"--out {dest}", "already holds results; pass --force to replace them")])
    if args.seed is not None:
        runs = [replace(s, seed=args.seed) for s in runs]
    names = args.profile or list(first.profiles)
    if first.trials is not None:
        return _run_trials(args, sweep, runs, names, dest)
    steps = sum(round(s.duration / s.step) for s in runs)
    with Progress(
        TextColumn("[bold]{task.description:<14}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("sim-s"),
        TimeRemainingColumn(),
        console=err,
        transient=False,
        disable=args.quiet,
    ) as bar:
        tasks = {n: bar.add_task(n, total=steps) for n in names}
        done = dict.fromkeys(names, 0)

        def progress(name: str, step: int, total: int) -> None:
            if step % 50 == 0 or step == total:
                bar.update(tasks[name], completed=done[name] + step)
            if step == total:
                done[name] += total

        if sweep is None:
            results = run_scenario(runs[0], names, progress=progress)
        else:
            sweep_runs = run_sweep(runs, sweep.values, names, progress=progress)
    try:
        if sweep is None:
            write_results(runs[0], results, dest, force=args.force)
        else:
            write_sweep_results(sweep, runs, sweep_runs, dest, force=args.force)
    except OutputError as exc:
        _error(str(exc))
        return 2
    if not args.quiet:
        if sweep is None:
            _print_summary(results)
        else:
            _print_sweep(sweep, sweep_runs)
    out.print(f"results in {dest}/ (open {dest / 'report.html'})", markup=False, soft_wrap=True)
    return 0


def _run_trials(args, sweep, runs, names: list[str], dest: Path) -> int:
    """A scenario with [trials]: every profile re-places many Random placements (Virtue's method)."""
    from sova.control.trials import check_trials, run_trials
    from sova.report.trials import trials_document, write_trials
    from sova.report.writer import OutputError, write_atomically

    check_trials(runs[0], names)
    if args.jobs is not None and args.jobs < 1:
        raise InputError([Problem("--jobs", f"expected a positive number of processes, got {args.jobs}")])
    groups = []
    with Progress(
        TextColumn("[bold]{task.description:<14}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("trials"),
        TimeRemainingColumn(),
        console=err,
        disable=args.quiet,
    ) as bar:
        values = sweep.values if sweep is not None else [None]
        for k, (value, scenario) in enumerate(zip(values, runs, strict=True)):
            task = bar.add_task(scenario.name if sweep is None else sweep.describe(k), total=scenario.trials.count)
            trial_runs = run_trials(
                scenario, names, args.jobs or 0, lambda n, total, t=task: bar.update(t, completed=n)
            )
            groups.append((value, trial_runs))
    doc = trials_document(runs[0], groups, names, sweep)
    try:
        write_atomically(dest, args.force, lambda d: write_trials(doc, groups, d, runs[0].outputs.plots, sweep))
    except OutputError as exc:
        _error(str(exc))
        return 2
    if not args.quiet:
        for k, val in enumerate(doc["values"]):
            stats = val["stats"]
            t = Table(title="median relative to Random" + ("" if sweep is None else f" at {sweep.describe(k)}"))
            t.add_column("profile")
            keys = [k for k in ("web", "job") if k in stats[names[0]]]
            for k in keys:
                t.add_column(f"{k}: vs Random's median", justify="right")
                t.add_column(f"{k}: improved", justify="right")
            t.add_column("runtime (s)", justify="right")
            for p in names:
                s = stats[p]
                cells = []
                for k in keys:
                    cells += [f"{s[k]['median_vs_random_median'] - 1:+.0%}", f"{s[k]['improved']:.0%}"]
                t.add_row(p, *cells, f"{s['seconds_median']:.3g}")
            out.print(t)
    out.print(f"results in {dest}/ (open {dest / 'report.html'})", markup=False, soft_wrap=True)
    return 0


def _print_sweep(sweep, sweep_runs) -> None:
    from sova.report.html import metric_value
    from sova.report.sweep import METRICS

    profiles = [r.profile for r in sweep_runs[0].results]
    label, path, scale, unit = next(
        m for m in METRICS if metric_value(sweep_runs[0].results[0].summary, m[1]) is not None
    )
    t = Table(title=f"{label} ({unit}) against {sweep.axis}")
    t.add_column(sweep.axis, justify="right")
    for p in profiles:
        t.add_column(p, justify="right")
    for run in sweep_runs:
        vals = [metric_value(r.summary, path) for r in run.results]
        t.add_row(str(run.value), *("–" if v is None else f"{v * scale:.3g}" for v in vals))
    out.print(t)


def _print_summary(results) -> None:
    t = Table(title="Summary", show_lines=False)
    t.add_column("metric")
    for r in results:
        t.add_column(r.profile, justify="right")

    def row(label, fn):
        vals = []
        for r in results:
            try:
                vals.append(fn(r.summary))
            except (KeyError, TypeError):
                vals.append("–")
        t.add_row(label, *vals)

    row("hottest host CPU (p95)", lambda s: f"{s['cpu']['host_util_max_p95']:.0%}")
    row("time with a host > 90 %", lambda s: f"{s['cpu']['hot_host_fraction']:.1%}")
    row("web requests served", lambda s: f"{s['services']['served']:,.0f}")
    row("mean response time", lambda s: f"{s['services']['response_mean'] * 1e3:.2f} ms")
    row("p99 response time", lambda s: f"{s['services']['response_p99'] * 1e3:.2f} ms")
    row("migrations", lambda s: f"{s['migrations']['completed']} ({s['migrations']['failed']} failed)")
    row("energy", lambda s: f"{s['energy_kwh']:.3f} kWh")
    row("sim-s per wall-s", lambda s: f"{s['speed']:,.0f}")
    out.print(t)


def _policies() -> int:
    from sova.plan.base import registry

    for name, cls in sorted(registry().items()):
        out.print(f"{name} ({cls.loop} loop): {cls.summary}", markup=False, soft_wrap=True, style="bold")
        for key, f in cls.params.items():
            out.print(
                f"    {key:<10} {f.expected():<40} default {f.default!r:<8} {f.doc}", markup=False, soft_wrap=True
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())


def _place(args) -> int:
    from sova.control.place import place

    if args.window <= 0:
        raise InputError([Problem("--window", f"got {args.window:g}; expected a positive number of seconds")])
    _, runs = _load(args.scenario)
    params = {k: _toml_value(v) for k, v in _pairs(args.param, "--param", "KEY=VALUE, e.g. steps=50000")}
    r = place(runs[0], args.algorithm, args.window, params)
    table = Table(title=f"{args.algorithm} on {args.scenario.name} (measured {args.window:g} s)")
    table.add_column("resource")
    table.add_column("now", justify="right")
    table.add_column("after", justify="right")
    table.add_row("objective (max utilization)", f"{r.before:.1%}", f"{r.after:.1%}")
    for kind in r.peaks_before:
        table.add_row(f"peak {kind}", f"{r.peaks_before[kind]:.1%}", f"{r.peaks_after[kind]:.1%}")
    out.print(table)
    for vm, a, b in r.moves:
        out.print(f"  move {vm}: {a} -> {b}", markup=False)
    out.print(f"{len(r.moves)} move(s); optimizer {r.seconds * 1000:.0f} ms; nothing was migrated", markup=False)
    return 0


def _lab(args) -> int:
    from sova.lab.lab import DEFAULT_DIR, Lab

    lab = Lab(args.dir or DEFAULT_DIR, say=lambda text: err.print(text, markup=False))
    if args.lab_command == "up":
        state = lab.up(args.hosts, args.vms_per_host, install_missing=not args.no_install)
        for h in state.hosts:
            out.print(f"{h.name}  {h.uri}", markup=False, soft_wrap=True)
        out.print("VFs in this lab are emulated (a rate-limited virtio NIC), not SR-IOV hardware", markup=False)
    elif args.lab_command == "status":
        for line in lab.status():
            out.print(line, markup=False, soft_wrap=True)
    elif args.lab_command == "load":
        out.print(f"{args.vm}: {lab.load(args.vm, args.settings)}", markup=False)
    else:
        lab.down()
        out.print(f"lab in {lab.dir} removed", markup=False)
    return 0


def _manage(args) -> int:
    import json
    from dataclasses import asdict

    from sova.control.manage import BUILTIN_PROFILES, manage
    from sova.drivers.libvirt_driver import LibvirtDriver
    from sova.model.scenario import CONTROL_FIELDS, ControlSpec, ProfileSpec
    from sova.model.schema import Reader

    hosts, options = {}, {}
    if args.lab is not None:
        from sova.lab.lab import Lab, driver_options

        state = Lab(args.lab).state()
        hosts = {h.name: h.uri for h in state.hosts}
        options = driver_options(state)
    if args.hosts_file is not None:
        from sova.drivers.hosts_file import load_hosts_file

        cfg = load_hosts_file(args.hosts_file)
        hosts.update(cfg.hosts)
        options.update(sriov=cfg.sriov, migration_uri=cfg.migration_uri, nic_bandwidth=cfg.nic_bandwidth)
    hosts.update(_pairs(args.host, "--host", "NAME=URI, e.g. node1=qemu+ssh://root@node1/system"))
    params: dict[str, dict] = {}
    for key, val in _pairs(args.param, "--param", "POLICY.KEY=VALUE, e.g. sova.alpha=0.8", dotted=True):
        pol, _, k = key.partition(".")
        params.setdefault(pol, {})[k] = _toml_value(val)
    profile = ProfileSpec(args.profile, BUILTIN_PROFILES[args.profile], args.mode, params)
    from sova.control.profiles import check_profile

    r = Reader("--param")
    policies = check_profile(r, profile)
    if r.problems:
        raise InputError(r.problems)
    rails = {k: _toml_value(v) for k, v in _pairs(args.control, "--control", "KEY=VALUE, e.g. hold_down=120")}
    r = Reader("sova manage")  # the scenario's [control] table: the same keys, units, ranges and errors
    control = ControlSpec(**r.table(rails, CONTROL_FIELDS, "--control"))
    if r.problems:
        raise InputError(r.problems)
    driver = LibvirtDriver(hosts, **options)
    driver.connect()
    audit = args.audit.open("a", encoding="utf-8") if args.audit else None

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
        manage(driver, policies, control, args.mode, args.duration, on_entry=on_entry, ask=ask)
    except KeyboardInterrupt:
        out.print("stopped", markup=False)
    finally:
        driver.close()
        if audit is not None:
            audit.close()
    return 0


def _pairs(items: list[str], flag: str, expected: str, dotted: bool = False) -> list[tuple[str, str]]:
    """KEY=VALUE arguments as (key, value) pairs; a malformed one is an input error naming the flag."""
    out = []
    for item in items:
        key, sep, val = item.partition("=")
        if not sep or not key or not val or (dotted and "." not in key):
            raise InputError([Problem(flag, f"{item!r}: expected {expected}")])
        out.append((key, val))
    return out


def _toml_value(text: str):
    """A command-line value read as TOML would read it (numbers, booleans, durations as strings)."""
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
