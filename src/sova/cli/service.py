"""``sova manager`` and ``sova agent``: service mode's processes (``sova token``: cli/token.py)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from sova.cli.common import a_path, add_forecast_horizon_argument, described, number, out, pairs
from sova.model.schema import MAX_SEED, InputError, Problem

PASSWORD_ENV = "SOVA_NATS_PASSWORD"
DEFAULT_API = "127.0.0.1:8421"


def state_dir() -> Path:
    """Where a user's Sova keeps its state by default ($XDG_STATE_HOME/sova, else ~/.local/state/sova)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "sova"


def default_state_url() -> str:
    return f"sqlite:///{state_dir() / 'manager.db'}"


def log_to_stderr(log_format: str = "text") -> None:
    """A daemon's log lines: time, part, level, message, or JSON objects (systemd's journal or `sova serve`
    keeps them); a warning that repeats is backed off (service/log_backoff.py)."""
    from sova.service.log_backoff import set_up

    set_up(log_format)


def add_log_argument(parser) -> None:
    parser.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="log lines as text, or one JSON object per line for a log collector (default: text)",
    )


def add_bus_arguments(parser) -> None:
    parser.add_argument(
        "--nats",
        default="nats://127.0.0.1:4222",
        metavar="URL[,URL...]",
        help="the NATS server, or every server of a cluster, comma-separated (default %(default)s)",
    )
    parser.add_argument("--nats-user", default=None, metavar="USER", help="the bus user")
    parser.add_argument(
        "--nats-password-file",
        type=Path,
        default=None,
        metavar="FILE",
        help=f"a file holding the bus password (or set {PASSWORD_ENV}; never on the command line)",
    )
    parser.add_argument(
        "--nats-tls-ca", type=Path, default=None, metavar="FILE", help="TLS to the bus: the CA of its certificate"
    )
    parser.add_argument("--nats-tls-cert", type=Path, default=None, metavar="FILE", help="this side's certificate")
    parser.add_argument("--nats-tls-key", type=Path, default=None, metavar="FILE", help="this side's private key")


def add_sim_arguments(parser) -> None:
    """--speed and --seed of a simulated cluster on the wall clock."""
    parser.add_argument(
        "--speed",
        type=number("a positive speed-up", lo=0, lo_open=True),
        default=1.0,
        help="with --sim: simulated seconds per wall second (default 1)",
    )
    parser.add_argument(
        "--seed",
        type=number("a whole number from 0 to 2^63 - 1", 0, MAX_SEED, integer=True),
        default=None,
        help="with --sim: the seed",
    )


def bus_settings(args):
    from sova.service.bus import BusError, TlsFiles, server_urls
    from sova.service.daemons import BusSettings

    password = os.environ.get(PASSWORD_ENV)
    if args.nats_password_file is not None:
        try:
            password = args.nats_password_file.read_text().strip()
        except OSError as exc:
            raise InputError([Problem(f"--nats-password-file {args.nats_password_file}", str(exc))]) from None
    try:
        urls = server_urls(args.nats)
    except BusError as exc:
        raise InputError([Problem("--nats", str(exc))]) from None
    tls = None
    if args.nats_tls_ca is not None:
        for flag, path in (("--nats-tls-ca", args.nats_tls_ca), ("--nats-tls-cert", args.nats_tls_cert)):
            if path is not None and not path.is_file():
                raise InputError([Problem(f"{flag} {path}", "no such file")])
        tls = TlsFiles(args.nats_tls_ca, args.nats_tls_cert, args.nats_tls_key)
    elif args.nats_tls_cert is not None or args.nats_tls_key is not None or any(u.startswith("tls://") for u in urls):
        raise InputError([Problem("--nats-tls-ca", "TLS to the bus needs the CA that signed its certificate")])
    return BusSettings(args.nats, args.nats_user, password, tls)


def host_port(text: str, flag: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError([Problem(flag, f"{text!r}: expected HOST:PORT, e.g. {DEFAULT_API}")])
    return host, int(port)


def add_state_argument(parser) -> None:
    parser.add_argument(
        "--state", default=None, metavar="URL", help="SQLAlchemy URL (default: SQLite in ~/.local/state)"
    )


def open_store(url: str | None):
    """The state store at `url` (None: the default), or an input error naming --state."""
    import sqlalchemy as sa

    from sova.service.state import StateStore

    url = url or default_state_url()
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError([Problem(f"--state {url}", f"cannot create {path.parent}: {exc.strerror}")]) from None
    try:
        return StateStore(url)
    except (sa.exc.SQLAlchemyError, ValueError, ImportError) as exc:
        raise InputError([Problem(f"--state {url}", f"cannot open the state store: {exc}")]) from None


def add_parsers(sub) -> None:
    from sova.cli.manage import add_profile_arguments, add_rules_argument

    m = sub.add_parser(
        "manager",
        help="the service's manager: global loops, executor, approvals, audit, REST API",
        **described(
            "Run the manager of service mode: it merges the agents' host reports from the bus, runs the "
            "profile's global policies, sends their actions to the agents under ids (each applied at most "
            "once), keeps plans, approvals and the audit trail in its state store, and serves the REST API, "
            "the dashboard and /metrics. Run two on different machines over one PostgreSQL state store: one "
            "leads (a lease on the bus), the other stands by and takes over if the leader stops. Stop with "
            "Ctrl-C or SIGTERM.",
            [
                "sova manager --nats nats://10.0.0.5:4222 --nats-user sova --nats-password-file /etc/sova/nats.pw",
                "sova manager --state postgresql+psycopg://sova@db/sova --profile sova --mode approve",
                "sova manager --api 0.0.0.0:8421 --tls-cert /etc/sova/api.crt --tls-key /etc/sova/api.key",
                "sova manager --tls-cert api.crt --tls-key api.key --tls-client-ca /etc/sova/clients-ca.pem",
                "sova manager --health 0.0.0.0:8422  (health checks for a load balancer, off the API's loop)",
            ],
            "docs/service.md: deployment, tokens, TLS, the API",
        ),
    )
    add_bus_arguments(m)
    add_log_argument(m)
    add_state_argument(m)
    add_profile_arguments(m, scenario=True)
    m.add_argument("--api", default=DEFAULT_API, metavar="HOST:PORT", help="where the API listens (%(default)s)")
    m.add_argument("--no-api", action="store_true", help="serve no API")
    m.add_argument(
        "--health",
        default=None,
        metavar="HOST:PORT",
        help="also answer /healthz and /readyz here, from a thread: quick while the API is busy (plain HTTP)",
    )
    m.add_argument("--tls-cert", type=Path, default=None, metavar="FILE", help="the API's TLS certificate (PEM)")
    m.add_argument("--tls-key", type=Path, default=None, metavar="FILE", help="the API's TLS private key (PEM)")
    m.add_argument(
        "--tls-client-ca",
        type=Path,
        default=None,
        metavar="FILE",
        help="with --tls-cert: serve only clients showing a certificate this CA signed (mutual TLS)",
    )
    m.add_argument(
        "--stale-after",
        type=number("a positive number of seconds", lo=0, lo_open=True),
        default=30.0,
        metavar="SECONDS",
        help="leave out a host whose last report is older (default 30)",
    )

    add_rules_argument(m)
    add_forecast_horizon_argument(m)
    m.add_argument(
        "--name", default=None, metavar="NAME", help="this manager's name in the lease (default HOSTNAME-PID)"
    )
    m.add_argument(
        "--lease-ttl",
        type=number("a number of seconds >= 3 (three rounds)", lo=3),
        default=10.0,
        metavar="SECONDS",
        help="how long a silent leader keeps the lease before a standby takes over (default 10)",
    )

    m.add_argument(
        "--action-expiry",
        type=number("a positive number of seconds", lo=0, lo_open=True),
        default=120.0,
        metavar="SECONDS",
        help="an agent away longer than this after an action was sent refuses to start it (default 120)",
    )
    m.add_argument(
        "--fence-wait",
        type=number("a positive number of seconds", lo=0, lo_open=True),
        default=30.0,
        metavar="SECONDS",
        help="how long a failed host's agent has to answer its fence, else `sova host fenced` is needed (30)",
    )

    m.add_argument(
        "--runs",
        type=a_path,
        default=None,
        metavar="DIR",
        help="where simulation runs submitted through the API go (default ~/.local/state/sova/runs)",
    )
    m.add_argument(
        "--run-traces",
        type=Path,
        default=None,
        metavar="DIR",
        help="trace files a scenario submitted through the API may read (default: none)",
    )
    m.add_argument(
        "--parallel-runs",
        type=number("a positive whole number", lo=1, integer=True),
        default=1,
        metavar="N",
        help="simulation runs at once (default 1; each is a process of its own)",
    )

    a = sub.add_parser(
        "agent",
        help="the service's agent on a hypervisor host (or a simulated cluster's agents)",
        **described(
            "Run an agent: every period it observes its host (through libvirt) and publishes the host's report "
            "on the bus; it applies the manager's actions, each id at most once even across its own restarts "
            "(its ledger), and sends their outcomes. It runs the local policies of --profile itself (VF "
            "scheduling, Dom0 tuning, the storage SLO engine), holding its VMs to the SLOs set through the "
            "manager's API. With --sim it runs the simulator on the wall clock and one agent per simulated host "
            "instead.",
            [
                "sova agent --host node1 --uri qemu:///system --peer node2=qemu+ssh://root@node2/system",
                "sova agent --lab /var/lib/sova-lab --host host1 --profile see",
                "sova agent --sim scenarios/quickstart.toml --speed 10",
            ],
        ),
    )
    add_bus_arguments(a)
    add_log_argument(a)
    add_profile_arguments(a, scenario=True, default="default", mode=False)
    a.add_argument("--host", default=None, metavar="NAME", help="this host's name (a lab host with --lab)")
    a.add_argument("--uri", default=None, metavar="URI", help="this host's libvirt URI (default qemu:///system)")
    a.add_argument(
        "--peer", action="append", default=[], metavar="NAME=URI", help="another host (a migration's destination)"
    )
    a.add_argument("--lab", type=Path, default=None, metavar="DIR", help="a host of the lab in DIR")
    a.add_argument("--sim", type=Path, default=None, metavar="SCENARIO", help="a simulated cluster's agents")
    add_sim_arguments(a)
    a.add_argument(
        "--period",
        type=number("a positive number of seconds", lo=0, lo_open=True),
        default=1.0,
        metavar="SECONDS",
        help="seconds between reports (default 1; with --sim the scenario's monitor period, simulated)",
    )
    a.add_argument(
        "--ledger", type=a_path, default=None, metavar="PATH", help="the agent's ledger (a directory with --sim)"
    )


def keep_private() -> None:
    """What a service process makes from here on (its database, ledgers, logs, directories) is its owner's
    alone: files 0600, directories 0700. The state holds the audit trail and token hashes."""
    os.umask(0o077)


def manager_command(args) -> int:
    import asyncio

    from sova.cli.manage import profile_and_rails
    from sova.cli.snapshot import profile_table
    from sova.control.manage import BUILTIN_PROFILES
    from sova.model.rule_reader import load_rules_file
    from sova.service.api_server import ApiServerError
    from sova.service.bus import BusError
    from sova.service.daemons import ManagerSettings, run_manager
    from sova.service.health_server import HealthServerError
    from sova.service.plan_forecasts import ForecastSettings

    policies, control, profile = profile_and_rails(args, "sova manager")
    log_to_stderr(args.log_format)
    keep_private()
    api = None if args.no_api else host_port(args.api, "--api")
    health = None if args.health is None else host_port(args.health, "--health")
    if (args.tls_cert is None) != (args.tls_key is None):
        raise InputError([Problem("--tls-cert/--tls-key", "give both the certificate and its key, or neither")])
    if args.tls_client_ca is not None and args.tls_cert is None:
        raise InputError([Problem("--tls-client-ca", "client certificates need TLS: give --tls-cert and --tls-key")])
    for flag, path in (
        ("--tls-cert", args.tls_cert),
        ("--tls-key", args.tls_key),
        ("--tls-client-ca", args.tls_client_ca),
    ):
        if path is not None and not path.is_file():
            raise InputError([Problem(f"{flag} {path}", "no such file")])
    url = args.state or default_state_url()
    open_store(url).close()  # a store that cannot be opened fails now, not after connecting
    settings = ManagerSettings(
        bus=bus_settings(args),
        state=url,
        policies=policies,
        control=control,
        profile=args.profile,
        mode=args.mode,
        stale_after=args.stale_after,
        api=api,
        tls=(args.tls_cert, args.tls_key) if args.tls_cert else None,
        tls_client_ca=args.tls_client_ca,
        health=health,
        profiles=BUILTIN_PROFILES,
        name=args.name or f"{socket.gethostname()}-{os.getpid()}",
        lease_ttl=args.lease_ttl,
        action_expiry=args.action_expiry,
        fence_wait=args.fence_wait,
        runs=args.runs or state_dir() / "runs",
        parallel_runs=args.parallel_runs,
        run_traces=args.run_traces,
        rules=load_rules_file(args.rules, None) if args.rules else None,
        profile_table={"name": profile.name, **profile_table(profile)},
        forecasts=ForecastSettings(args.forecast_horizon) if args.forecast_horizon > 0 else None,
    )
    where = f"; API on http{'s' if settings.tls else ''}://{args.api}" if api else ""
    where += f"; health checks on http://{args.health}" if health else ""
    loops = f"global loops: {', '.join(p.name for p in policies if p.loop == 'global') or 'none'}; "
    loops += f"local loops (in the agents): {', '.join(p.name for p in policies if p.loop == 'local') or 'none'}"
    ready = lambda: out.print(  # noqa: E731
        f"manager up: profile {args.profile} ({args.mode}; {loops}), state {url}{where}", markup=False
    )
    try:
        asyncio.run(run_manager(settings, ready))
    except ApiServerError as exc:
        raise InputError([Problem("--api", str(exc))]) from None
    except HealthServerError as exc:
        raise InputError([Problem("--health", str(exc))]) from None
    except BusError as exc:
        raise InputError([Problem("--nats", str(exc))]) from None
    return 0


def agent_command(args) -> int:
    from sova.service.bus import BusError

    settings = bus_settings(args)
    log_to_stderr(args.log_format)
    keep_private()
    try:
        return _run_agent(args, settings)
    except BusError as exc:
        raise InputError([Problem("--nats", str(exc))]) from None


def _run_agent(args, settings) -> int:
    import asyncio

    from sova.cli.manage import profile_and_rails
    from sova.service.daemons import LocalSettings, run_agent, run_sim_agents

    if args.sim is not None:
        if args.host or args.uri or args.lab or args.peer:
            raise InputError([Problem("--sim", "runs every simulated host's agent; leave out --host/--uri/--lab")])
        from sova.model.sweep import load_scenario

        scenario = load_scenario(args.sim)
        args.scenario = args.scenario or args.sim  # the simulated cluster's profiles
        policies, _, _ = profile_and_rails(args, "sova agent")
        ledgers = args.ledger or state_dir() / f"sim-agents-{scenario.name}"
        ready = lambda: out.print(  # noqa: E731
            f"agents up: {scenario.name}'s {len(scenario.hosts)} host(s) at {args.speed:g}x; "
            f"local loops: {_local_names(policies)}",
            markup=False,
        )
        asyncio.run(run_sim_agents(settings, scenario, ledgers, args.speed, args.seed, policies, ready))
        return 0
    if args.host is None:
        raise InputError([Problem("--host", "name this host (or give --sim SCENARIO)")])
    policies, control, _ = profile_and_rails(args, "sova agent")
    driver = _libvirt_driver(args)
    try:
        driver.connect()
        ledger = args.ledger or state_dir() / f"agent-{args.host}.db"
        out.print(
            f"agent up: {args.host}, reporting every {args.period:g} s; local loops: {_local_names(policies)}",
            markup=False,
        )
        asyncio.run(run_agent(settings, args.host, driver, ledger, args.period, LocalSettings(policies, control)))
    finally:
        driver.close()
    return 0


def _local_names(policies) -> str:
    return ", ".join(p.name for p in policies if p.loop == "local") or "none (the profile has no local policy)"


def _libvirt_driver(args):
    """This host's driver; it reads its peers too, to tell a migrating VM's running copy and to migrate."""
    from sova.drivers.libvirt_driver import LibvirtDriver
    from sova.service.bus import BusError, host_token

    try:
        host_token(args.host)
    except BusError as exc:
        raise InputError([Problem("--host", str(exc))]) from None
    hosts, options = {}, {}
    if args.lab is not None:
        from sova.lab.lab import driver_settings

        hosts, options = driver_settings(args.lab)
        if args.host not in hosts:
            raise InputError([Problem("--host", f"{args.host!r} is not a host of the lab ({', '.join(hosts)})")])
    else:
        hosts[args.host] = args.uri or "qemu:///system"
    hosts.update(pairs(args.peer, "--peer", "NAME=URI, e.g. node2=qemu+ssh://root@node2/system"))
    return LibvirtDriver(hosts, **options)
