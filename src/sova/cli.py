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
