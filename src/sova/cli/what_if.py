"""``sova what-if``: what the simulator forecasts for a cluster snapshot over a horizon, for doing nothing, the
current profile, a drain, another profile or an added VM, each against doing nothing."""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from pathlib import Path

from sova.cli.common import described, duration, error, number, out, progress_bar
from sova.cli.snapshot import add_source_arguments
from sova.model.schema import InputError, Problem


def add_parser(sub) -> None:
    what_if = sub.add_parser(
        "what-if",
        help="forecast alternatives (nothing, as-is, a drain, a profile, a VM added) from a cluster snapshot",
        **described(
            "Run alternatives over --horizon from one cluster snapshot, each on the same demand and seed: "
            "doing nothing, the current profile (--as-is), and each change asked for (--drain, --profile, "
            "--add-vm). Prints per alternative the hot-host time, the hottest host's CPU, storage SLO "
            "compliance, web response time where it is known, migrations and energy, and the trade-off "
            "against doing nothing. SNAPSHOT is a scenario `sova snapshot export` wrote (or any scenario); "
            "--socket takes the snapshot from a running `sova manage`, --run from a simulated run; with --api a "
            "running `sova manager` runs the what-if on its cluster now and answers.",
            [
                "sova what-if cluster.toml --drain hm2 --profile sova",
                "sova what-if --socket /run/user/0/sova-manage-0.sock --drain node3",
                "sova what-if --api http://127.0.0.1:8421 --drain hv3      (SOVA_TOKEN from the environment)",
                "sova what-if --run scenarios/quickstart.toml --at 12min --as-is threshold --add-vm web9:2:4GiB:1.5",
                "sova what-if cluster.toml --json",
            ],
            "docs/service.md (What-if) says what a snapshot holds and how the forecasts were checked.",
        ),
    )
    what_if.add_argument("snapshot", nargs="?", type=Path, metavar="SNAPSHOT.toml", help="the cluster snapshot")
    add_source_arguments(
        what_if,
        "--as-is",
        "the profile running now: with --run, the one it runs (default: the first); else one of the snapshot's "
        "(default: its first but 'nothing')",
    )
    what_if.add_argument(
        "--horizon", type=duration(), default=1800.0, metavar="DURATION", help="how far ahead (default 30 min)"
    )
    what_if.add_argument(
        "--step",
        type=duration(),
        metavar="DURATION",
        help="the simulator's step (default: the snapshot's sample interval; 1 s steps are slower, docs/service.md)",
    )
    what_if.add_argument("--drain", action="append", default=[], metavar="HOST", help="an alternative: drain HOST")
    what_if.add_argument(
        "--profile", action="append", default=[], metavar="NAME", help="an alternative: profile NAME's policies"
    )
    what_if.add_argument(
        "--add-vm",
        action="append",
        default=[],
        metavar="NAME:VCPUS:MEMORY[:CPU]",
        help="an alternative: a VM of that size (CPU: cores it keeps busy, default all its vCPUs) placed now",
    )
    what_if.add_argument(
        "--plan",
        type=Path,
        metavar="FILE.json",
        help="an alternative: a plan's actions (a JSON list, as the API's plans list them) approved at the start, "
        "nothing else acting",
    )
    what_if.add_argument(
        "--workers",
        type=number("a whole number >= 1", lo=1, integer=True),
        default=1,
        metavar="N",
        help="alternatives run in N processes (default 1)",
    )
    what_if.add_argument("--json", action="store_true", help="print the answer as JSON")


def command(args) -> int:
    from sova.cli.snapshot import export
    from sova.model.cluster_snapshot import ExportSettings

    if (args.snapshot is None) == (args.run is None and args.socket is None and args.api is None):
        error("expected a SNAPSHOT file, --socket PATH, --api URL or --run SCENARIO (one of them)")
        return 2
    if args.api is not None:
        return _through_api(args)
    if args.snapshot is not None:
        return _what_if(args, args.snapshot, str(args.snapshot))
    with tempfile.TemporaryDirectory(prefix="sova-what-if-") as place:  # the snapshot, only for this answer
        snapshot = Path(place) / "snapshot.toml"
        settings = ExportSettings(args.window, args.interval, args.after, args.horizon)
        export(args, snapshot, settings, quiet=args.json)
        source = f"sova manage at {args.socket}" if args.socket else f"{args.run} at {args.at:g} s"
        return _what_if(args, snapshot, source)


def _what_if(args, snapshot: Path, source: str) -> int:
    from sova.cli.run import load
    from sova.experiments.what_if import alternatives, run_alternatives, sample_interval, step_problem
    from sova.report.what_if_answer import answer

    sweep, runs = load(snapshot)
    if sweep is not None:
        error(f"{snapshot} is a sweep; expected one cluster snapshot")
        return 2
    base = runs[0]
    current = _current(base, args.run_profile)
    chosen = alternatives(
        base,
        current,
        drains=_hosts(base, args.drain),
        profiles=[_profile(base, name) for name in args.profile],
        added=[_added_vm(base, text) for text in args.add_vm],
        plan=_plan(args.plan) if args.plan is not None else (),
    )
    step = args.step or sample_interval(base)
    if step is not None and (problem := step_problem(base, step)):
        raise InputError([Problem("--step", problem)])
    with progress_bar(f"{len(chosen)} alternatives", len(chosen), args.json) as done:
        results = run_alternatives(base, chosen, args.horizon, args.seed, args.workers, done, step)
    reply = answer(results, args.horizon, source)
    if args.json:
        print(json.dumps(reply, indent=2))
    else:
        print_answer(reply)
    return 0


def _through_api(args) -> int:
    """The manager runs the what-if on its cluster now (POST /api/v1/what-if), as a job followed to its end."""
    from sova.cli.snapshot import api_call

    if args.plan is not None or args.step is not None or args.run_profile is not None:
        error("--plan, --step and --as-is are not for --api (the manager runs its own profile as-is)")
        return 2
    request = {
        "horizon": args.horizon,
        "drain": args.drain,
        "profiles": args.profile,
        "add_vms": args.add_vm,
        "window": args.window,
        "interval": args.interval,
    }
    job = api_call(args, "post", "/api/v1/what-if", json=request)
    with (
        out.status(f"what-if {job['id']} on the manager's cluster, over {args.horizon:g} s")
        if not args.json
        else (contextlib.nullcontext())
    ):
        while job["state"] in ("queued", "running"):
            time.sleep(1.0)
            job = api_call(args, "get", f"/api/v1/what-if/{job['id']}")
    if job["state"] == "failed":
        error(f"what-if {job['id']} failed: {job['error']}")
        return 1
    reply = job["answer"]
    if args.json:
        print(json.dumps(reply, indent=2))
    else:
        print_answer(reply)
    return 0


def _current(base, name: str | None):
    if name is None:
        return next((profile for profile in base.profiles.values() if profile.name != "nothing"), None)
    return _profile(base, name, "--as-is")


def _profile(base, name: str, flag: str = "--profile"):
    from sova.control.manage import BUILTIN_PROFILES
    from sova.model.scenario import ProfileSpec

    if name in base.profiles:
        return base.profiles[name]
    if name in BUILTIN_PROFILES:
        return ProfileSpec(name, BUILTIN_PROFILES[name])
    known = sorted({*base.profiles, *BUILTIN_PROFILES})
    raise InputError([Problem(flag, f"{name!r} is no profile of the snapshot nor a built-in one ({', '.join(known)})")])


def _hosts(base, names: list[str]) -> list[str]:
    known = {host.name for host in base.hosts}
    problems = [Problem("--drain", f"{name!r} is no host of the snapshot") for name in names if name not in known]
    if problems:
        raise InputError(problems)
    return names


def _added_vm(base, text: str):
    """NAME:VCPUS:MEMORY[:CPU] as a VM placed by the admission policy once the run starts, busy CPU cores of
    its vCPUs (a lookbusy load)."""
    from sova.model import units
    from sova.model.scenario import VmSpec, WorkloadSpec

    parts = text.split(":")
    expected = "NAME:VCPUS:MEMORY[:CPU], e.g. web9:2:4GiB:1.5"
    try:
        name, vcpus, memory = parts[0], int(parts[1]), units.memory_mib(parts[2])
        cpu = float(parts[3]) if len(parts) > 3 else float(vcpus)
    except (IndexError, ValueError):
        raise InputError([Problem("--add-vm", f"{text!r}; expected {expected}")]) from None
    problems = []
    if not name or name in {vm.name for vm in base.vms}:
        problems.append(Problem("--add-vm", f"{name!r} is empty or a VM of the snapshot already; expected a new name"))
    if len(parts) > 4 or vcpus < 1 or not 0 < memory < float("inf") or not 0 <= cpu <= vcpus:
        problems.append(Problem("--add-vm", f"{text!r}; expected {expected} (VCPUS >= 1, 0 <= CPU <= VCPUS)"))
    if problems:
        raise InputError(problems)
    vm = VmSpec(
        name, "", vcpus=vcpus, memory=memory, arrive=base.step, storage=base.storage[0].name if base.storage else ""
    )
    load = WorkloadSpec("lookbusy", name, {"duty": 1.0, "util": cpu / vcpus, "period": 10.0}, stagger=False)
    return vm, load


def _plan(path: Path) -> tuple:
    """A plan's actions from a JSON list of actions as the API lists them (each with its kind and fields)."""
    from sova.service.wire import WireError, decode_action

    try:
        entries = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError([Problem(f"--plan {path}", f"cannot read it as JSON: {exc}")]) from None
    if not isinstance(entries, list) or not entries or not all(isinstance(entry, dict) for entry in entries):
        raise InputError([Problem(f"--plan {path}", "expected a non-empty JSON list of actions (objects)")])
    actions = []
    for index, entry in enumerate(entries):
        try:
            actions.append(decode_action(json.dumps({"id": "plan"} | entry).encode())[1])
        except WireError as exc:
            raise InputError([Problem(f"--plan {path} [{index}]", str(exc))]) from None
    return tuple(actions)


def print_answer(reply: dict) -> None:
    from rich.table import Table

    from sova.report.what_if_answer import QUANTITIES

    rows = reply["alternatives"]
    shown = [key for key in QUANTITIES if any(row["forecast"][key] is not None for row in rows)]
    table = Table(title=f"what-if over {reply['horizon']:g} s from {reply['source']}")
    table.add_column("alternative")
    for key in shown:
        table.add_column(key.replace("_", " "), justify="right")
    for row in rows:
        cells = []
        for key in shown:
            value = row["forecast"][key]
            change = (row.get("difference") or {}).get(key)
            text = "n/a" if value is None else f"{value:,.3g}"
            cells.append(text if not change else f"{text} ({change:+,.3g})")
        table.add_row(row["name"], *cells)
    out.print(table)
    for row in rows[1:]:
        out.print(row["tradeoff"], markup=False)
