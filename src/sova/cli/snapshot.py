"""``sova snapshot export``: the cluster as a scenario file (hosts, VMs where they run, rules, SLOs, the last
minutes of each VM's demand in a Parquet file beside it), to run, edit or ask what-if questions of. The cluster
comes from a running `sova manage` (its control socket) or from a simulated run."""

from __future__ import annotations

import base64
import dataclasses
import os
from pathlib import Path

from sova.cli.common import described, duration, out, progress_bar, refusal, take_negative_values
from sova.model.cluster_snapshot import ExportSettings, write_snapshot
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
            "the window each VM's demand follows --after. The cluster comes from a running `sova manage` "
            "(--socket) or a simulated run (--run: the scenario's profile run to --at). `sova run FILE` runs "
            "it; its profiles are 'nothing' and the one running.",
            [
                "sova snapshot export --socket /run/user/0/sova-manage-0.sock --out cluster.toml",
                "sova snapshot export --run scenarios/quickstart.toml --profile threshold --at 12min --out cluster.toml",
                "sova run cluster.toml",
            ],
            "docs/service.md (What-if) says what a snapshot holds and what it assumes.",
        ),
    )
    actions = snapshot.add_subparsers(dest="snapshot_command", metavar="ACTION", required=True)
    export = actions.add_parser("export", help="write the cluster as a scenario file and its demand series")
    add_source_arguments(export)
    export.add_argument("--out", type=Path, required=True, metavar="FILE.toml", help="the scenario file to write")
    export.add_argument("--force", action="store_true", help="replace FILE and its demand file if they exist")
    export.add_argument(
        "--duration", type=duration(), default=1800.0, metavar="DURATION", help="the scenario's run (default 30 min)"
    )


def add_source_arguments(
    parser, profile_flag: str = "--profile", profile_help: str = "with --run: its profile to run (default: the first)"
) -> None:
    """Where the cluster comes from (--socket, --api with --token, or --run with --at, `profile_flag` and
    --seed), and how much of its history is taken (--window, --interval, --after)."""
    take_negative_values(parser)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--socket", type=Path, metavar="PATH", help="a running `sova manage`'s control socket")
    source.add_argument("--api", metavar="URL", help="a running `sova manager`'s (or `sova serve`'s) API")
    source.add_argument("--run", type=Path, metavar="SCENARIO.toml", help="a scenario to run on the simulator")
    parser.add_argument("--at", type=duration(), metavar="DURATION", help="with --run: when to take the snapshot")
    parser.add_argument(profile_flag, dest="run_profile", metavar="NAME", help=profile_help)
    parser.add_argument("--seed", type=int, metavar="N", help="the simulator's seed (default: the scenario's)")
    parser.add_argument(
        "--token", default=os.environ.get("SOVA_TOKEN"), help="with --api: an API token (default: $SOVA_TOKEN)"
    )
    parser.add_argument(
        "--window", type=duration(), default=600.0, metavar="DURATION", help="history of demand (default 600 s)"
    )
    parser.add_argument(
        "--interval", type=duration(), default=10.0, metavar="DURATION", help="seconds per sample (default 10)"
    )
    parser.add_argument(
        "--after",
        choices=AFTER,
        default="last",
        help="demand past the window: last sample (the default), window mean, or AR(1) forecast (docs/service.md)",
    )


def command(args) -> int:
    settings = ExportSettings(args.window, args.interval, args.after, args.duration)
    export(args, args.out, settings, args.force)
    out.print(f"wrote {args.out} and {demand_file(args.out).name}; run it: sova run {args.out}", markup=False)
    return 0


def export(args, scenario_file: Path, settings: ExportSettings, force: bool = False, quiet: bool = False) -> None:
    """Write the cluster args name (--socket, or --run and --at) as `scenario_file` and its demand file."""
    if args.socket is None and args.run is None and args.api is None:
        raise InputError(
            [
                Problem(
                    "--socket / --api / --run", "expected where the cluster is: --socket PATH, --api URL or --run FILE"
                )
            ]
        )
    if (args.run is None) != (args.at is None):
        raise InputError([Problem("--at", "--run and --at go together: --run SCENARIO --at DURATION")])
    demand_path = demand_file(scenario_file)
    writable(scenario_file, demand_path, force)
    if args.socket is not None:
        document, data = _from_socket(args.socket, scenario_file, settings)
    elif args.api is not None:
        document, data = _from_api(args, scenario_file, settings)
    else:
        document, data = _from_run(args, scenario_file, settings, quiet)
    write_snapshot(scenario_file, demand_path, document, data)


def _from_socket(path: Path, scenario_file: Path, settings: ExportSettings) -> tuple[dict, bytes]:
    from sova.control.slo_service import ask
    from sova.control.snapshot_service import ANSWER_SECONDS

    request = {
        "op": "snapshot",
        "name": scenario_file.stem,
        "demand_file": demand_file(scenario_file).name,
        **{key: getattr(settings, key) for key in ("window", "interval", "after", "duration")},
    }
    answer = ask(path, request, timeout=ANSWER_SECONDS + 10)
    if not answer.get("ok"):
        raise InputError([Problem(f"--socket {path}", answer.get("error", "no answer"))])
    return answer["document"], base64.b64decode(answer["demand"])


def _from_api(args, scenario_file: Path, settings: ExportSettings) -> tuple[dict, bytes]:
    params = {"name": scenario_file.stem, **{key: getattr(settings, key) for key in ("window", "interval", "after")}}
    answer = api_call(args, "get", "/api/v1/snapshot", params={**params, "duration": settings.duration})
    if answer["demand_file"] != demand_file(scenario_file).name:
        raise InputError([Problem(f"--api {args.api}", f"the snapshot names its demand file {answer['demand_file']}")])
    return answer["document"], base64.b64decode(answer["demand"])


def api_call(args, method: str, path: str, timeout: float = 60.0, **request) -> dict:
    """A call to the manager's API at --api with --token; its answer, or an input error naming the API."""
    import httpx

    if not args.token:
        raise InputError([Problem("--token", "no API token: give --token or set SOVA_TOKEN (`sova token add`)")])
    headers = {"Authorization": f"Bearer {args.token}"}
    try:
        with httpx.Client(base_url=args.api, headers=headers, timeout=timeout) as client:
            response = client.request(method.upper(), path, **request)
    except httpx.HTTPError as exc:
        raise InputError([Problem(f"--api {args.api}", f"cannot reach the API: {exc}")]) from None
    if response.status_code >= 400:
        raise InputError([Problem(f"--api {args.api}", refusal(response, method, path))])
    return response.json()


def _from_run(args, scenario_file: Path, settings: ExportSettings, quiet: bool) -> tuple[dict, bytes]:
    from sova.cli.run import load

    sweep, runs = load(args.run)
    if sweep is not None:
        raise InputError([Problem("--run", f"{args.run} is a sweep; expected one scenario to export from")])
    scenario = runs[0]
    name = args.run_profile or next(iter(scenario.profiles))
    if name not in scenario.profiles:
        raise InputError(
            [Problem("--profile", f"{name!r} is no profile of {args.run}; it has {', '.join(scenario.profiles)}")]
        )
    if args.at > scenario.duration:
        raise InputError([Problem("--at", f"{args.at:g} s is past {args.run}'s end ({scenario.duration:g} s)")])
    if args.at < 2 * settings.interval:
        raise InputError(
            [Problem("--at", f"{args.at:g} s holds less than two samples of {settings.interval:g} s (--interval)")]
        )
    return snapshot_of_run(scenario, name, args.at, scenario_file, settings, args.seed, quiet)


def snapshot_of_run(
    scenario: Scenario,
    profile: str,
    at: float,
    scenario_file: Path,
    settings: ExportSettings,
    seed: int | None = None,
    quiet: bool = True,
) -> tuple[dict, bytes]:
    """`profile` of `scenario` run on the simulator to `at`, and its cluster then: the scenario file's tables
    and the demand file's bytes, the scenario's own inventory (storage, hyper-threads) and [simulator] kept."""
    from sova.experiments.scenario_runs import run_until

    with progress_bar(f"running {profile} to {at:g} s", at, quiet) as update:
        run = run_until(scenario, profile, at, seed, lambda _name, done, _total: update(done))
    return export_run(run, scenario, profile, scenario_file, settings)


def export_run(run, scenario: Scenario, profile: str, scenario_file: Path, settings: ExportSettings):
    """A run's cluster now (`run_until`'s): the scenario file's tables and the demand file's bytes."""
    from sova.model.cluster_snapshot import SnapshotError, export_snapshot
    from sova.model.observed_demand import demand_bytes

    try:
        document, demand = export_snapshot(
            run.runtime.knowledge,
            dataclasses.replace(settings, step=scenario.step),
            scenario_file.stem,
            demand_file(scenario_file).name,
            profiles=profiles_of(scenario, profile),
            slos=scenario.slos,
            simulator=changed_settings(run.scenario),
            control=dataclasses.asdict(scenario.control),
            source=f"{scenario.name}'s profile {profile} (simulated)",
            inventory=scenario,
        )
    except SnapshotError as exc:
        raise InputError([Problem("--interval", str(exc))]) from None
    return document, demand_bytes(demand)


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
    problems += [
        Problem("--out", f"{path} is a directory; expected a file name")
        for path in (scenario_file, demand_path)
        if path.is_dir()
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
    """A profile as a scenario's [profiles.NAME] table."""
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
