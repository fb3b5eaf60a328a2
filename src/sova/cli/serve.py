"""``sova serve``: the whole service on this machine, over simulated hosts or the lab's real ones."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path

from sova.cli.common import a_path, add_forecast_horizon_argument, described, number, out
from sova.cli.service import DEFAULT_API, add_sim_arguments, host_port, keep_private, state_dir
from sova.model.schema import InputError, Problem


def add_parser(sub) -> None:
    s = sub.add_parser(
        "serve",
        help="the whole service on this machine: nats-server, manager, agents, API and dashboard",
        **described(
            "Start nats-server, the manager (with its API and dashboard) and the agents, each a process of its "
            "own, over a simulated cluster (--sim: the simulator on the wall clock, times --speed) or the lab's "
            "real hosts (--lab). Everything goes in a new directory (--dir), with each process's log and an "
            "admin token for the dashboard. Ctrl-C stops every part by its PID.",
            [
                "sova serve --sim scenarios/quickstart.toml",
                "sova serve --sim scenarios/quickstart.toml --speed 10 --profile threshold --mode approve",
                "sova serve --sim scenarios/quickstart.toml --nats-cluster 3",
                "sudo sova serve --lab /var/lib/sova-lab --profile sova --api 127.0.0.1:8421",
            ],
            "docs/service.md: what each part does; sova manager and sova agent run them on a real cluster",
        ),
    )
    s.add_argument("--sim", type=Path, default=None, metavar="SCENARIO", help="simulated hosts from this scenario")
    s.add_argument("--lab", type=Path, default=None, metavar="DIR", help="the real hosts of the lab in DIR")
    s.add_argument("--api", default=DEFAULT_API, metavar="HOST:PORT", help="where the API listens (%(default)s)")
    add_sim_arguments(s)
    s.add_argument("--dir", type=a_path, default=None, metavar="DIR", help="where the stack keeps its files (new)")
    s.add_argument(
        "--nats-cluster",
        type=number("a whole number of servers from 1 to 7", 1, 7, integer=True),
        default=1,
        metavar="N",
        help="run the bus as a JetStream cluster of N nats-servers on loopback, streams replicated (3: one may die)",
    )
    _profile_arguments(s)


def _profile_arguments(parser) -> None:
    from sova.control.manage import BUILTIN_PROFILES

    parser.add_argument(
        "--profile",
        default=None,
        help=f"policies to run: {', '.join(BUILTIN_PROFILES)} or the scenario's (default: its first with policies)",
    )
    parser.add_argument("--mode", default="auto", choices=["auto", "approve", "dry-run"], help="apply, ask, or log")
    add_forecast_horizon_argument(parser)
    parser.add_argument("--param", action="append", default=[], metavar="POLICY.KEY=VALUE", help="a policy parameter")
    parser.add_argument("--control", action="append", default=[], metavar="KEY=VALUE", help="an executor rail")


def command(args) -> int:
    from sova.service.local_stack import LocalStack, StackError

    # Ctrl-C stops the stack even when a shell started it as a background job, with SIGINT ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)

    if (args.sim is None) == (args.lab is None):
        raise InputError([Problem("sova serve", "give --sim SCENARIO or --lab DIR (one of them)")])
    api = host_port(args.api, "--api")
    _check_port_free(api)
    directory = args.dir or state_dir() / "serve" / time.strftime("%Y%m%d-%H%M%S")
    if directory.exists() and any(directory.iterdir()):
        raise InputError([Problem(f"--dir {directory}", "exists and is not empty; give a new directory")])
    keep_private()  # the stack's directory, database, ledgers and logs: the user's alone
    if args.sim is not None:
        profile, agents, hosts, what = _sim_parts(args, directory)
        manager_args = ["--scenario", str(args.sim)]
    else:
        profile, agents, hosts, what = _lab_parts(args, directory)
        manager_args = []
    # the manager runs the profile's global policies, the agents its local ones
    _check_profile(args, profile)  # as the manager and agents will, but before anything starts
    profile_args = ["--profile", profile]
    for flag, values in (("--param", args.param), ("--control", args.control)):
        for value in values:
            profile_args += [flag, value]
    manager_args += [*profile_args, "--mode", args.mode, "--forecast-horizon", f"{args.forecast_horizon:g}"]
    _make_directory(directory)  # last of the checks: a refused input leaves no directory behind
    agents = [(name, agent_args + profile_args, hosts) for name, agent_args, hosts in agents]
    stack = LocalStack(directory, api, manager_args, agents, hosts, nats_cluster=args.nats_cluster)
    bus = "nats-server" if args.nats_cluster == 1 else f"a cluster of {args.nats_cluster} nats-servers"
    out.print(f"starting {bus}, the manager and the agents of {what} in {directory} ...", markup=False)
    try:  # from the first start on: a Ctrl-C at any moment stops every part started so far
        try:
            stack.start()
        except StackError as exc:
            raise InputError([Problem("sova serve", str(exc))]) from None
        out.print(f"dashboard and API: {stack.url}/  (the admin token is in {directory / 'admin.token'})", markup=False)
        out.print(f"API reference: {stack.url}/docs; metrics: {stack.url}/metrics; Ctrl-C stops it all", markup=False)
        while True:  # watching the parts, each started again if it exits; Ctrl-C or SIGTERM ends the watch
            for line in stack.supervise():
                out.print(line, markup=False)
            time.sleep(0.5)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the way to stop it
        out.print("stopping ...", markup=False)
    finally:
        stack.stop()
    out.print(f"stopped; its state and logs stay in {directory}", markup=False)
    return 0


def _check_profile(args, profile: str) -> None:
    """--profile, --param and --control as the children would read them (an InputError naming the flag)."""
    import argparse

    from sova.cli.manage import profile_and_rails

    profile_and_rails(argparse.Namespace(**(vars(args) | {"profile": profile, "scenario": args.sim})), "sova serve")


def _sim_parts(args, directory: Path):
    from sova.model.sweep import load_scenario
    from sova.service.bus import BusError, host_token

    scenario = load_scenario(args.sim)  # a bad scenario fails here, before anything starts
    try:  # one bus user speaks for all the hosts: their agents are one process
        hosts = [host_token(host.name) for host in scenario.hosts]
    except BusError as exc:
        raise InputError([Problem(f"--sim {args.sim}", str(exc))]) from None
    profile = args.profile or next((n for n, p in scenario.profiles.items() if p.policies), "sova")
    agent_args = ["--sim", str(args.sim), "--speed", repr(args.speed), "--ledger", str(directory / "ledgers")]
    if args.seed is not None:
        agent_args += ["--seed", str(args.seed)]
    what = f"{scenario.name} ({len(scenario.hosts)} simulated hosts at {args.speed:g}x, profile {profile})"
    return profile, [("agents", agent_args, hosts)], len(scenario.hosts), what


def _lab_parts(args, directory: Path):
    from sova.lab.lab import Lab
    from sova.service.bus_users import agent_user_name

    state = Lab(args.lab).state()
    profile = args.profile or "sova"
    agents = [
        (
            agent_user_name(h.name),  # the agent's process and its bus user, which speaks for its host alone
            ["--lab", str(args.lab), "--host", h.name, "--ledger", str(directory / f"{h.name}.db")],
            [h.name],
        )
        for h in state.hosts
    ]
    return profile, agents, len(state.hosts), f"the lab's {len(state.hosts)} host(s)"


def _check_port_free(api: tuple[str, int]) -> None:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no user
        try:
            probe.bind(api)
        except OSError as exc:
            raise InputError([Problem(f"--api {api[0]}:{api[1]}", f"cannot listen there: {exc.strerror}")]) from None


def _make_directory(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            [Problem(f"--dir {directory}", f"cannot be created: {exc.strerror or exc}; expected a writable place")]
        ) from None
