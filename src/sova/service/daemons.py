"""The long-running processes of service mode, wired from their settings: the manager (bus, state, loop,
API) and the agents (one real host through libvirt, or a simulated cluster). Each runs until SIGTERM or
SIGINT, then stops its parts in order and closes what it opened; the CLI (``sova manager``, ``sova
agent``) checks the settings first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass, field
from pathlib import Path

from sova.drivers.base import Driver
from sova.model.placement_rules import RuleBook
from sova.model.scenario import ControlSpec, Scenario
from sova.plan.base import Policy
from sova.service.agent import HostAgent, LocalSide, SimCluster, run_host_agent
from sova.service.bus import Bus, TlsFiles
from sova.service.ledger import Ledger
from sova.service.local_loops import LocalLoops, SharedObservation
from sova.service.plan_forecasts import ForecastSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BusSettings:
    url: str
    user: str | None = None
    password: str | None = None
    tls: TlsFiles | None = None

    async def connect(self, name: str, streams: bool = True) -> Bus:
        """streams: make the bus's streams if missing (the manager; an agent's user may not)."""
        return await Bus.connect(self.url, self.user, self.password, name=name, tls=self.tls, streams=streams)


@dataclass(frozen=True)
class ManagerSettings:
    bus: BusSettings
    state: str  # SQLAlchemy URL
    policies: list[Policy]
    control: ControlSpec
    profile: str
    mode: str = "auto"
    tick: float = 1.0
    stale_after: float = 30.0
    api: tuple[str, int] | None = None
    tls: tuple[Path, Path] | None = None  # the API's certificate and key
    tls_client_ca: Path | None = None  # with tls: API clients must show a certificate this CA signed
    health: tuple[str, int] | None = None  # where /healthz and /readyz are also answered, off the event loop
    profiles: dict = field(default_factory=dict)  # the built-in profiles, listed by the API
    name: str = "manager"  # as the lease shows the leader
    lease_ttl: float = 10.0
    action_expiry: float = 120.0
    fence_wait: float = 30.0  # s a failed host's agent has to answer its fence
    runs: Path | None = None  # where simulation runs submitted through the API go (None: no runs)
    parallel_runs: int = 1
    run_traces: Path | None = None  # where submitted scenarios may read trace files
    rules: RuleBook | None = None  # the operator's placement rules (--rules)
    profile_table: dict | None = None  # the running profile as a [profiles.NAME] table, for what-if's as-is
    forecasts: ForecastSettings | None = None  # approve mode: each plan's forecast (None: none)


def _stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)


async def run_manager(settings: ManagerSettings, ready=None) -> None:
    """The manager until a signal: its loop, and its API if asked (`ready` is called once it serves)."""
    from sova.service.api import make_app
    from sova.service.api_server import ApiServer
    from sova.service.health_server import HealthServer
    from sova.service.lease import Lease
    from sova.service.manager import Manager
    from sova.service.runs import RunBook
    from sova.service.state import StateStore
    from sova.service.tokens import TokenBook

    stop = asyncio.Event()
    _stop_on_signals(stop)
    store = StateStore(settings.state)
    bus = await settings.bus.connect(f"sova-manager-{settings.name}")  # as the servers list it
    manager = Manager(
        bus,
        store,
        settings.policies,
        settings.control,
        mode=settings.mode,
        profile=settings.profile,
        tick=settings.tick,
        stale_after=settings.stale_after,
        lease=Lease(bus, settings.name, settings.lease_ttl),
        action_expiry=settings.action_expiry,
        fence_wait=settings.fence_wait,
        rules=settings.rules,
        profile_table=settings.profile_table,
        forecasts=settings.forecasts,
    )
    server = health = None
    runs = RunBook(settings.runs, settings.parallel_runs, settings.run_traces) if settings.runs is not None else None
    watcher = asyncio.create_task(_watch_runs(runs, stop)) if runs is not None else None
    try:
        if settings.api is not None:
            secure = settings.tls is not None
            app = make_app(manager, TokenBook(store), settings.profiles, secure_cookie=secure, runs=runs)
            certificate, key = settings.tls or (None, None)
            server = ApiServer(app, *settings.api, certificate, key, settings.tls_client_ca)
            await server.start()
        if settings.health is not None:
            health = HealthServer(manager, *settings.health)
            health.start()
        if ready is not None:
            ready()
        await manager.run(stop)
    finally:
        stop.set()  # also when the start-up failed: the runs' watcher ends
        if health is not None:
            await asyncio.to_thread(health.stop)
        if server is not None:
            await server.stop()
        if runs is not None:
            await asyncio.gather(watcher, return_exceptions=True)
            runs.stop()
        await bus.close()
        store.close()


async def _watch_runs(runs, stop: asyncio.Event) -> None:
    """Start queued simulation runs as others end, every second until `stop`."""
    while not stop.is_set():
        runs.poll()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)


@dataclass(frozen=True)
class LocalSettings:
    """The local loops an agent runs: its profile's local policies under the profile's rails."""

    policies: list[Policy] = field(default_factory=list)
    control: ControlSpec = field(default_factory=ControlSpec)


async def run_agent(
    bus_settings: BusSettings, host: str, driver: Driver, ledger: Path, period: float, local: LocalSettings
) -> None:
    """One host's agent until a signal."""
    stop = asyncio.Event()
    _stop_on_signals(stop)
    bus = await bus_settings.connect(f"sova-agent-{host}", streams=False)
    book = Ledger(ledger)
    shared = SharedObservation(driver, max_age=min(period, local.control.monitor_period) / 2, host=host)
    loops = LocalLoops(shared, local.policies, local.control)
    side = LocalSide(bus, loops, own=host) if loops.policies else None
    try:
        await run_host_agent(HostAgent(bus, host, driver, book), shared.full, period, stop, side)
    finally:
        await bus.close()
        book.close()


async def run_sim_agents(
    bus_settings: BusSettings,
    scenario: Scenario,
    ledgers: Path,
    speed: float,
    seed: int | None,
    policies: list[Policy],
    ready=None,
) -> None:
    """A simulated cluster's agents (one per host), with the local ones among `policies`, until a signal."""
    stop = asyncio.Event()
    _stop_on_signals(stop)
    bus = await bus_settings.connect("sova-sim-agents", streams=False)
    cluster = SimCluster(bus, scenario, ledgers, speed, seed, policies)
    try:
        if ready is not None:
            ready()
        await cluster.run(stop)
    finally:
        await bus.close()
        cluster.close()
