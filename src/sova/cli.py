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
from sova.model.schema import InputError, Problem
from sova.sim.engine import SimError
from sova.sim.traces import TraceError

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)

EPILOG = """examples:
  sova validate scenarios/quickstart.toml
  sova run scenarios/quickstart.toml --out results/quickstart
  sova run scenarios/quickstart.toml --profile default --profile threshold --seed 3
  sova policies

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
    return p


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
    except InputError as exc:
        _print_problems(exc.problems)
        return 2
    except (TraceError, SimError) as exc:
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
    from sova.control.profiles import load_checked

    return load_checked(path)


def _validate(args) -> int:
    s = _load(args.scenario)
    from sova.sim.engine import Simulator

    Simulator(s)  # loads traces and builds the fabric: every remaining input error shows here
    out.print(
        f"ok {args.scenario}: {s.name!r}, {len(s.hosts)} hosts, {len(s.vms)} VMs, "
        f"{len(s.workloads)} workloads, profiles: {', '.join(s.profiles)}",
        markup=False,
        soft_wrap=True,
    )
    return 0


def _run(args) -> int:
    from sova.control.experiment import run_scenario
    from sova.report.writer import OutputError, write_results

    s = _load(args.scenario)
    if args.profile:
        unknown = [p for p in args.profile if p not in s.profiles]
        if unknown:
            raise InputError(
                [
                    Problem(f"--profile {u}", f"no such profile; the scenario defines {', '.join(s.profiles)}")
                    for u in unknown
                ]
            )
    if args.seed is not None and args.seed < 0:
        raise InputError([Problem("--seed", f"expected a non-negative integer, got {args.seed}")])
    dest = args.out or Path("results") / s.name
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())) and not args.force:
        raise InputError([Problem(f"--out {dest}", "already holds results; pass --force to replace them")])
    if args.seed is not None:
        from dataclasses import replace

        s = replace(s, seed=args.seed)
    names = args.profile or list(s.profiles)
    if args.quiet:
        results = run_scenario(s, names)
    else:
        with Progress(
            TextColumn("[bold]{task.description:<14}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("sim-s"),
            TimeRemainingColumn(),
            console=err,
            transient=False,
        ) as bar:
            tasks = {n: bar.add_task(n, total=round(s.duration / s.step)) for n in names}

            def progress(name: str, done: int, total: int) -> None:
                if done % 50 == 0 or done == total:
                    bar.update(tasks[name], completed=done)

            results = run_scenario(s, names, progress=progress)
    try:
        write_results(s, results, dest, force=args.force)
    except OutputError as exc:
        _error(str(exc))
        return 2
    if not args.quiet:
        _print_summary(results)
    out.print(f"results in {dest}/ (open {dest / 'report.html'})", markup=False, soft_wrap=True)
    return 0


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
