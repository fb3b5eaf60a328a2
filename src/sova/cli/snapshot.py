"""``sova snapshot export``: the cluster as a scenario file (hosts, VMs where they run, rules, SLOs, the last
minutes of each VM's demand in a Parquet file beside it), to run, edit or ask what-if questions of."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from sova.cli.common import described, duration, out, progress_bar, take_negative_values
from sova.model.scenario import ProfileSpec, Scenario, simulator_defaults
from sova.model.schema import InputError, Problem

AFTER = ("last", "mean", "ar")


def add_parser(sub) -> None:
    snapshot = sub.add_parser(
        "snapshot",
        help="the cluster as a scenario file (export), to replay, edit or ask what-if of",
        **described(
            "Write the cluster as a scenario: its hosts and their capacities, its VMs where they run, the rules "
            "and storage SLOs, and each VM's demand over the last --window (CPU wanted, memory, disk IO, network "
            "to outside and to each VM it sent to), sampled every --interval into FILE's .demand.parquet; past "
            "the window each VM's demand follows --after. The cluster comes from a simulated run (--run: the "
            "scenario's profile run to --at). `sova run FILE` runs it; its profiles are 'nothing' and the one it "
            "ran.",
            [
                "sova snapshot export --run scenarios/quickstart.toml --profile threshold --at 12min --out cluster.toml",
                "sova run cluster.toml",
            ],
            "docs/service.md (What-if) says what a snapshot holds and what it assumes.",
        ),
    )
    actions = snapshot.add_subparsers(dest="snapshot_command", metavar="ACTION", required=True)
    export = actions.add_parser("export", help="write the cluster as a scenario file and its demand series")
    take_negative_values(export)
    export.add_argument("--run", type=Path, required=True, metavar="SCENARIO.toml", help="a scenario to run")
    export.add_argument("--profile", metavar="NAME", help="its profile to run (default: the first)")
    export.add_argument("--at", type=duration(), required=True, metavar="DURATION", help="when to take the snapshot")
    export.add_argument("--seed", type=int, metavar="N", help="the run's seed (default: the scenario's)")
    export.add_argument("--out", type=Path, required=True, metavar="FILE.toml", help="the scenario file to write")
    export.add_argument("--force", action="store_true", help="replace FILE and its demand file if they exist")
    export.add_argument(
        "--window", type=duration(), default=600.0, metavar="DURATION", help="history of demand (default 600 s)"
    )
    export.add_argument(
        "--interval", type=duration(), default=10.0, metavar="DURATION", help="seconds per sample (default 10)"
    )
    export.add_argument(
        "--after",
        choices=AFTER,
        default="ar",
        help="demand past the window: last sample, window mean, or AR(1) forecast (default ar)",
    )
    export.add_argument(
        "--duration", type=duration(), default=1800.0, metavar="DURATION", help="the scenario's run (default 30 min)"
    )


def command(args) -> int:
    demand = export(
        args.run,
        args.profile,
        args.at,
        args.out,
        args.seed,
        args.force,
        args.window,
        args.interval,
        args.after,
        args.duration,
    )
    out.print(
        f"wrote {args.out} and {demand_file(args.out).name} ({len(demand.vms)} VMs, {demand.samples} samples of "
        f"{demand.interval:g} s); run it: sova run {args.out}",
        markup=False,
    )
    return 0


def export(
    run_path: Path,
    profile: str | None,
    at: float,
    scenario_file: Path,
    seed: int | None = None,
    force: bool = False,
    window: float = 600.0,
    interval: float = 10.0,
    after: str = "ar",
    duration: float = 1800.0,
    quiet: bool = False,
):
    """Run `run_path`'s `profile` (default its first) to `at` and write the cluster then as `scenario_file` and
    its demand file; returns the demand written."""
    from sova.cli.run import load
    from sova.experiments.scenario_runs import run_until
    from sova.model.cluster_snapshot import ExportSettings, observed_demand, scenario_document

    sweep, runs = load(run_path)
    if sweep is not None:
        raise InputError([Problem("--run", f"{run_path} is a sweep; expected one scenario to export from")])
    scenario = runs[0]
    name = profile or next(iter(scenario.profiles))
    if name not in scenario.profiles:
        raise InputError(
            [Problem("--profile", f"{name!r} is no profile of {run_path}; it has {', '.join(scenario.profiles)}")]
        )
    if at > scenario.duration:
        raise InputError([Problem("--at", f"{at:g} s is past {run_path}'s end ({scenario.duration:g} s)")])
    demand_path = demand_file(scenario_file)
    writable(scenario_file, demand_path, force)
    settings = ExportSettings(window, interval, after, duration, scenario.step)
    with progress_bar(f"running {name} to {at:g} s", at, quiet) as update:
        run = run_until(scenario, name, at, seed, lambda _name, done, _total: update(done))
    knowledge = run.runtime.knowledge
    demand = observed_demand(knowledge, settings)
    document = scenario_document(
        knowledge,
        scenario_file.stem,
        demand_path.name,
        settings,
        profiles=profiles_of(scenario, name),
        slos=scenario.slos,
        simulator=changed_settings(run.scenario),
        control=dataclasses.asdict(scenario.control),
        source=f"{scenario.name}'s profile {name} (simulated)",
    )
    write_snapshot(scenario_file, demand_path, document, demand)
    return demand


def demand_file(scenario_file: Path) -> Path:
    """The demand series' file beside a scenario file: cluster.toml -> cluster.demand.parquet."""
    return scenario_file.with_name(f"{scenario_file.stem}.demand.parquet")


def writable(scenario_file: Path, demand_path: Path, force: bool) -> None:
    """Before any work: the files are new (or --force) and their directory takes files."""
    problems = [
        Problem("--out", f"{path} exists; expected a new file (or --force to replace it)")
        for path in (scenario_file, demand_path)
        if path.exists() and not force
    ]
    directory = scenario_file.parent
    if not directory.is_dir():
        problems.append(Problem("--out", f"{directory} is not a directory"))
    elif not os.access(directory, os.W_OK | os.X_OK):
        problems.append(Problem("--out", f"{directory} cannot be written"))
    if problems:
        raise InputError(problems)


def profiles_of(scenario: Scenario, name: str) -> dict:
    """The exported profiles: doing nothing, and the one that ran (acting by itself: auto)."""
    nothing = {"nothing": {"policies": []}}
    return nothing if name == "nothing" else {**nothing, name: profile_table(scenario.profiles[name])}


def profile_table(profile: ProfileSpec) -> dict:
    table: dict = {"policies": list(profile.policies), "admission": profile.admission}
    if profile.params:
        table["params"] = _without_none(profile.params)
    if profile.simulator:
        table["simulator"] = _without_none(profile.simulator)
    return table


def changed_settings(scenario: Scenario) -> dict:
    """The [simulator] keys the run set to other than their defaults."""
    defaults = simulator_defaults()
    return _without_none({key: value for key, value in scenario.simulator.items() if value != defaults.get(key)})


def _without_none(table: dict) -> dict:
    """TOML has no null: a key without a value is left out (its default)."""
    return {
        key: _without_none(value) if isinstance(value, dict) else list(value) if isinstance(value, tuple) else value
        for key, value in table.items()
        if value is not None
    }


def write_snapshot(scenario_file: Path, demand_path: Path, document: dict, demand) -> None:
    """The demand file, then the scenario file, each written whole (a temporary renamed over it)."""
    import tomli_w

    from sova.model.observed_demand import write_demand

    write_demand(demand_path, demand)
    temporary = scenario_file.with_name(f".{scenario_file.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(tomli_w.dumps(document))
        os.replace(temporary, scenario_file)
    finally:
        temporary.unlink(missing_ok=True)
