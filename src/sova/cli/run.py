"""``sova run``: a scenario on the simulator, once per profile, its results written all at once."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from sova.cli.common import (
    Terminated,
    a_path,
    before_run,
    cluster_address,
    described,
    err,
    error,
    number,
    out,
    pairs,
    toml_value,
    warn,
)
from sova.cli.summary import print_summary, print_sweep
from sova.model.schema import MAX_SEED, InputError, Problem


def add_parser(sub) -> None:
    run = sub.add_parser(
        "run",
        help="run a scenario on the simulator, once per profile",
        **described(
            "Run SCENARIO on the built-in simulator once per profile, on the same workload and seed, and write "
            "summary.json, metrics.parquet (metrics-PROFILE.csv with [outputs] csv = true), audit-PROFILE.jsonl, PNG "
            "plots and report.html to --out.\n\n"
            "The results are written all at once at the end: an interrupted run (Ctrl-C, SIGTERM) leaves "
            "nothing behind. --out must be new, empty, or a directory Sova wrote (it holds a .sova-results "
            "file); --force replaces only the files Sova wrote there, never anything else.",
            [
                "sova run scenarios/quickstart.toml",
                "sova run scenarios/quickstart.toml --out results/qs --force",
                "sova run scenarios/quickstart.toml --profile threshold --seed 3 --out results/qs3",
                "sova run scenarios/papers/sova/table2-vf-scheduling.toml --quiet",
                "sova run scenarios/papers/virtue/web-20.toml --workers 2     ([trials]: Virtue's method)",
                "sova run scenarios/papers/cloudsim/planetlab.toml --workers 2     (22 profiles, 2 processes)",
                "sova run scenarios/papers/cloudsim/planetlab.toml --cluster tcp://10.0.0.5:8786",
                "sova run scenarios/papers/cloudsim/planetlab.toml --param day=20110306 --profile lr-mmt-1.2",
            ],
            "docs/outputs.md describes every file; docs/scenario-format.md every key of a scenario.",
        ),
    )
    run.add_argument("scenario", type=Path, metavar="SCENARIO.toml", help="scenario file")
    run.add_argument(
        "--out", type=a_path, default=None, metavar="DIR", help="result directory (default: results/SCENARIO-NAME)"
    )
    run.add_argument(
        "--profile",
        action="append",
        default=None,
        metavar="NAME",
        help="run only this profile (repeatable; default: every profile of the scenario)",
    )
    run.add_argument(
        "--seed",
        type=number("a whole number from 0 to 2^63 - 1", 0, MAX_SEED, integer=True),
        default=None,
        help="override the scenario's random seed",
    )
    run.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a value of the scenario's [params] table (repeatable), e.g. day=20110306",
    )
    run.add_argument("--force", action="store_true", help="replace the results of an earlier run in --out")
    run.add_argument(
        "--workers",
        type=number("a positive number of processes", 1, integer=True),
        default=None,
        metavar="N",
        help="run the profiles (at every sweep value), or the trials, in N processes (default: profiles one "
        "after the other, trials one process per core); results are a serial run's",
    )
    run.add_argument("--jobs", type=number("a positive number of processes", 1, integer=True), help=argparse.SUPPRESS)
    run.add_argument(
        "--cluster",
        type=cluster_address,
        default=None,
        metavar="tcp://HOST:PORT",
        help="run them on this Dask distributed scheduler's workers instead (Sova installed there, the "
        "scenario's trace files at the same paths)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress bar and no summary table")
    run.add_argument(
        "--progress-file",
        type=a_path,
        default=None,
        metavar="FILE.json",
        help='keep {"done": N, "total": M, "unit": ...} up to date in FILE (for tools that follow the run)',
    )


class ProgressFile:
    """The run's progress as a small JSON file, replaced atomically at most twice a second.

    The file is written once when the run starts, so a path that cannot be written is an input error
    before any work; should writing fail later (a full disk), the run goes on and stops following."""

    def __init__(self, path: Path | None, total: float, unit: str):
        self.path, self.total, self.unit, self.last = path, total, unit, 0.0
        if path is None:
            return
        if path.is_dir():
            raise InputError([Problem(f"--progress-file {path}", "is a directory; expected a file name")])
        try:
            self._write(0)
        except OSError as exc:
            raise InputError(
                [
                    Problem(
                        f"--progress-file {path}",
                        f"cannot be written: {exc.strerror or exc}; expected a file in a writable directory",
                    )
                ]
            ) from None

    def __call__(self, done: float) -> None:
        import time

        finished = done >= self.total * (1 - 1e-9)
        if self.path is None or (not finished and time.monotonic() - self.last < 0.5):
            return
        self.last = time.monotonic()
        try:
            self._write(self.total if finished else done)
        except OSError as exc:
            warn(f"--progress-file {self.path}: cannot be written ({exc.strerror or exc}); no longer followed")
            self.path = None

    def _write(self, done: float) -> None:
        import json
        import os
        import tempfile

        fd, partial = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".partial", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump({"done": round(done, 3), "total": round(self.total, 3), "unit": self.unit}, handle)
            os.replace(partial, self.path)
        except OSError:
            Path(partial).unlink(missing_ok=True)  # our own new file: nothing half-written stays
            raise


def load(path: Path, params: list[str] | None = None):
    """(sweep or None, scenarios): one scenario, or one per value of the file's [sweep]; `params` are
    --param's NAME=VALUE items."""
    from sova.control.profiles import check_profile
    from sova.model.sweep import load_runs

    values = {name: toml_value(text) for name, text in pairs(params or [], "--param", "NAME=VALUE, e.g. day=20110306")}
    sweep, runs = load_runs(path, profile_check=check_profile, params=values)
    if runs[0].trials is not None:  # each profile holds what a trial can run, whichever --profile picks
        from sova.experiments.trials import check_trials

        check_trials(runs[0], list(runs[0].profiles))
    return sweep, runs


def command(args) -> int:
    from sova.report import result_dir

    sweep, runs, names = _runs(args)
    before_run(runs, names, args.workers or args.jobs)
    dest = args.out or Path("results") / runs[0].name
    target = result_dir.prepare(dest, args.force)  # before the run: a place that cannot be written fails now
    try:
        if runs[0].trials is not None:
            fill, report, salvage = _run_trials(args, sweep, runs, names)
        else:
            fill, report, salvage = _run_profiles(args, sweep, runs, names)
        try:
            _fill(fill, salvage, target, runs[0])
        except OSError as exc:
            error(f"cannot write the results to {target.dest}: {exc.strerror or exc}; nothing was written")
            target.discard()
            return 1
        written = target.commit()
    except result_dir.CommitError as exc:
        error(str(exc))
        return 1
    except BaseException as exc:
        if target.written_to is None:
            target.discard()
            raise
        if not isinstance(exc, KeyboardInterrupt):
            raise
        return _interrupted(exc, target.written_to)  # a signal held while the results moved into place
    if salvage.failed:
        from sova.report.salvage import ERROR_FILE

        error(
            f"{salvage.failed} failed: {salvage.error}; the {salvage.finished} of {salvage.total} runs that "
            f"finished are in {written}/ ({ERROR_FILE} there has the traceback)"
        )
        return 1
    try:
        if not args.quiet:
            report()
    except KeyboardInterrupt as exc:
        return _interrupted(exc, written)
    if target.note:
        _print(f"note: {target.note}")
    out.print(f"results in {written}/ (open {written / 'report.html'})", markup=False, soft_wrap=True)
    return 0


def _fill(fill, salvage, target, scenario) -> None:
    """The full results into the target's staging directory; if a run failed, or writing them fails for
    anything but the disk, what finished and the error instead (``sova.report.salvage``)."""
    import traceback

    from sova.report.salvage import write_salvage

    if not salvage.failed:
        try:
            fill(target.staging)
            return
        except OSError:
            raise
        except Exception as exc:  # a bug in the report must not lose the simulation
            salvage.fail("writing the results", f"{type(exc).__name__}: {exc}", traceback.format_exc())
            target.empty()  # what the failed writer left half-done
    write_salvage(target.staging, scenario, salvage)


def _interrupted(exc: KeyboardInterrupt, written: Path) -> int:
    signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
    _print(f"{'terminated' if signum == signal.SIGTERM else 'interrupted'}; the results are complete in {written}")
    return 128 + signum


def _print(text: str) -> None:
    err.print(text, markup=False, soft_wrap=True)


def _runs(args):
    """The scenario's runs with --seed applied, and the profiles to run; bad arguments are input errors."""
    from dataclasses import replace

    sweep, runs = load(args.scenario, args.param)
    first = runs[0]
    problems = [
        Problem(f"--profile {profile}", f"no such profile; the scenario defines {', '.join(first.profiles)}")
        for profile in args.profile or []
        if profile not in first.profiles
    ]
    if problems:
        raise InputError(problems)
    if args.seed is not None:
        runs = [replace(scenario, seed=args.seed) for scenario in runs]
    names = args.profile or list(first.profiles)
    if first.trials is not None and args.cluster:
        raise InputError([Problem("--cluster", "a scenario with [trials] runs them on this machine; use --workers N")])
    return sweep, runs, names


def _run_profiles(args, sweep, runs, names: list[str]):
    """Every profile on the scenario (at every value of a sweep): how to write the results, the summary, and
    what finished (with what failed, if a run did)."""
    from sova.experiments.parallel import RunFailed
    from sova.experiments.scenario_runs import SweepRun, run_study, run_sweep
    from sova.report.salvage import Salvage
    from sova.report.writer import write_results, write_sweep_results

    salvage = Salvage(total=len(runs) * len(names))
    seconds = sum(scenario.duration for scenario in runs)  # simulated seconds of each profile, over every sweep value
    with Progress(
        TextColumn("[bold]{task.description:<14}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("simulated s"),
        TimeRemainingColumn(),
        console=err,
        transient=False,
        disable=args.quiet,
    ) as bar:
        tasks = {name: bar.add_task(name, total=seconds) for name in names}
        done = dict.fromkeys(names, 0.0)
        shown = dict.fromkeys(names, -1.0)
        follow = ProgressFile(args.progress_file, seconds * len(names), "simulated seconds")

        def progress(name: str, simulated: float, total: float) -> None:
            if simulated - shown[name] >= total / 500 or simulated == total:  # a step is cheap: not every one
                shown[name] = simulated
                bar.update(tasks[name], completed=done[name] + simulated)
                follow(sum(done.values()) + simulated)
            if simulated == total:
                done[name] += total
                shown[name] = -1.0

        try:
            if args.workers or args.cluster:  # whole runs in parallel: the bar counts runs done
                for task in tasks.values():
                    bar.remove_task(task)
                whole = bar.add_task("runs", total=len(runs) * len(names))
                follow = ProgressFile(args.progress_file, len(runs) * len(names), "runs")

                def finished(n: int) -> None:
                    bar.update(whole, completed=n)
                    follow(n)

                study = run_study(runs, names, args.workers or 1, args.cluster, finished)
                sweep_runs = [
                    SweepRun(value, profile_results)
                    for value, profile_results in zip(sweep.values if sweep else [None], study, strict=True)
                ]
            else:
                sweep_runs = run_sweep(runs, sweep.values if sweep else [None], names, progress=progress)
        except RunFailed as failure:  # items are (value, profile) pairs: what finished is kept, and why
            for item_index, result in failure.finished.items():
                salvage.profiles.append(
                    (
                        runs[item_index // len(names)],
                        _which(sweep, item_index // len(names), names[item_index % len(names)]),
                        result,
                    )
                )
            failed = _which(sweep, failure.index // len(names), names[failure.index % len(names)])
            salvage.fail(_describe(failed), failure.error, failure.trace)
            return None, None, salvage
    for value_index, run in enumerate(sweep_runs):
        salvage.profiles += [
            (runs[value_index], _which(sweep, value_index, profile_result.profile), profile_result)
            for profile_result in run.results
        ]
    if sweep is None:
        results = sweep_runs[0].results
        return (
            (lambda staging: write_results(runs[0], results, staging)),
            (lambda: print_summary(results, runs[0])),
            salvage,
        )
    return (
        (lambda staging: write_sweep_results(sweep, runs, sweep_runs, staging)),
        (lambda: print_sweep(sweep, sweep_runs)),
        salvage,
    )


def _which(sweep, k: int, profile: str) -> dict:
    """Which run of a study this is: its profile, and in a sweep the value of each swept key."""
    if sweep is None:
        return {"profile": profile}
    return {"profile": profile, **{part.key: part.values[k] for part in (sweep, *sweep.lockstep)}}


def _describe(which: dict) -> str:
    """ "profile threshold at rate = 3, vms = 8": a run's labels, as a sentence names them."""
    values = ", ".join(f"{key} = {value}" for key, value in which.items() if key != "profile")
    return f"profile {which['profile']}" + (f" at {values}" if values else "")


def _run_trials(args, sweep, runs, names: list[str]):
    """A scenario with [trials]: every profile re-places many Random placements (Virtue's method)."""
    from sova.experiments.parallel import RunFailed
    from sova.experiments.trials import run_trials
    from sova.report.salvage import Salvage
    from sova.report.trials_report import trials_document, write_trials

    groups = []
    salvage = Salvage(total=sum(swept_scenario.trials.count for swept_scenario in runs))
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
        follow = ProgressFile(args.progress_file, salvage.total, "trials")
        finished = 0
        for value_index, (value, scenario) in enumerate(zip(values, runs, strict=True)):
            task = bar.add_task(
                scenario.name if sweep is None else sweep.describe(value_index), total=scenario.trials.count
            )

            def progress(n: int, total: int, task=task, before=finished) -> None:
                bar.update(task, completed=n)
                follow(before + n)

            try:
                trial_runs = run_trials(scenario, names, args.workers or args.jobs or 0, progress)
            except RunFailed as failure:  # what finished is kept, and why the rest did not
                salvage.trials += [run for runs_of in failure.finished.values() for run in runs_of]
                where = f"trial {failure.index + 1}" + ("" if sweep is None else f" at {sweep.describe(value_index)}")
                salvage.fail(where, failure.error, failure.trace)
                return None, None, salvage
            finished += scenario.trials.count
            groups.append((value, trial_runs))
            salvage.trials += trial_runs
    doc = trials_document(runs[0], groups, names, sweep)
    return (
        (lambda staging: write_trials(doc, groups, staging, runs[0], sweep)),
        (lambda: _print_trials(doc, names, sweep)),
        salvage,
    )


def _print_trials(doc: dict, names: list[str], sweep) -> None:
    for value_index, val in enumerate(doc["values"]):
        stats = val["stats"]
        table = Table(
            title="median relative to Random" + ("" if sweep is None else f" at {sweep.describe(value_index)}")
        )
        table.add_column("profile")
        keys = [key for key in ("web", "job") if key in stats[names[0]]]
        for key in keys:
            table.add_column(f"{key}: vs Random's median", justify="right")
            table.add_column(f"{key}: improved", justify="right")
        table.add_column("runtime (s)", justify="right")
        for profile in names:
            profile_stats = stats[profile]
            cells = []
            for key in keys:
                cells += [
                    _shown(profile_stats[key]["median_vs_random_median"], "+.0%", -1),
                    _shown(profile_stats[key]["improved"], ".0%"),
                ]
            table.add_row(profile, *cells, _shown(profile_stats["seconds_median"], ".3g"))
        out.print(table)


def _shown(value, spec: str, offset: float = 0.0) -> str:
    """A statistic as the table shows it; "n/a", never "nan%", when a trial group gave it no value."""
    from sova.report.metrics import NOT_AVAILABLE, is_number

    return format(value + offset, spec) if is_number(value) else NOT_AVAILABLE
