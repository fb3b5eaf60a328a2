"""A service stack for tests: a simulated cluster's agents and a manager (and its API) on a real
nats-server, each on its own bus connection, as tasks of the test's event loop."""

from __future__ import annotations

import asyncio

from bus_helpers import connect, connect_as
from helpers import make_scenario
from sova.control.manage import BUILTIN_PROFILES
from sova.control.profiles import check_profile
from sova.model.scenario import ControlSpec, ProfileSpec
from sova.model.schema import Reader
from sova.service.agent import HostAgent, SimCluster
from sova.service.api import make_app
from sova.service.api_server import ApiServer
from sova.service.manager import Manager
from sova.service.natsd import free_port
from sova.service.runs import RunBook
from sova.service.state import StateStore
from sova.service.tokens import TokenBook

SPEED = 20.0  # simulated seconds per wall second


def hotspot_scenario():
    """Two 4-core hosts; four busy VMs on h1 (a hotspot from the start), h2 empty."""
    return make_scenario(
        scenario={"duration": 3600},
        hosts=[{"name": "h{i}", "count": 2, "cores": 4}],
        vms=[{"name": "v{i}", "count": 4, "host": "h1"}],
        workloads=[{"vm": "v*", "kind": "lookbusy", "duty": 1.0, "util": 1.0}],
    )


def threshold_policies(period: float = 10.0):
    reader = Reader("test")
    params = {"threshold-migration": {"period": period, "window": 5.0}}
    policies = check_profile(reader, ProfileSpec("threshold", ("threshold-migration",), params=params))
    assert not reader.problems
    return policies


async def wait_for(condition, timeout: float = 60.0) -> None:
    """Poll a plain condition while the stack runs in the same event loop."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the condition did not hold in time")
        await asyncio.sleep(0.05)


PEOPLE = {"admin": "ada", "operator": "otto", "viewer": "vera"}  # each role's token, by its holder's name


class Stack:
    """A simulated cluster's agents and one manager, each on its own bus connection, as tasks."""

    def __init__(
        self, server, tmp_path, mode: str = "auto", scenario=None, policies=None, speed: float = SPEED, users=None
    ):
        """scenario, policies: the simulated cluster's and the profile's (default: a hotspot, threshold
        migration); the local policies among them run in the agents. users: the bus users (bus_users.py)
        of the manager (under "manager") and of each host's agent (under its host), each agent then on a
        connection of its own; None: every part as the server's one user."""
        self.server, self.tmp_path, self.mode, self.speed, self.users = server, tmp_path, mode, speed, users
        self.agent_buses = []
        self.scenario = scenario or hotspot_scenario()
        self.policies = policies if policies is not None else threshold_policies()
        self.url = f"sqlite:///{tmp_path / 'manager.db'}"
        self.tasks: dict[str, tuple[asyncio.Event, asyncio.Task]] = {}

    async def start_cluster(self) -> SimCluster:
        if self.users is None:
            self.cluster_bus = await connect(self.server, "agents")
        else:  # the cluster's own connection (its local loops') is its first host's agent's
            self.cluster_bus = await connect_as(self.server, self.users[self.scenario.hosts[0].name])
        ledgers = self.tmp_path / "ledgers"
        self.cluster = SimCluster(self.cluster_bus, self.scenario, ledgers, self.speed, policies=self.policies)
        if self.users is not None:  # each host's agent as its own user
            for agent in self.cluster.agents:
                self.agent_buses.append(await connect_as(self.server, self.users[agent.host]))
            self.cluster.agents = [
                HostAgent(bus, agent.host, self.cluster.driver, agent.actions.ledger)
                for bus, agent in zip(self.agent_buses, self.cluster.agents, strict=True)
            ]
        self._spawn("cluster", self.cluster.run)
        return self.cluster

    async def start_manager(self, rules=None, fence_wait: float = 30.0, **options) -> Manager:
        """options: the Manager's others (profile_table, forecasts)."""
        if self.users is None:
            self.manager_bus = await connect(self.server, "manager")
        else:
            self.manager_bus = await connect_as(self.server, self.users["manager"], streams=True)
        self.store = StateStore(self.url)
        control = ControlSpec(hold_down=60.0)
        self.manager = Manager(
            self.manager_bus,
            self.store,
            self.policies,
            control,
            self.mode,
            tick=0.1,
            rules=rules,
            fence_wait=fence_wait,
            **options,
        )
        self._spawn("manager", self.manager.run)
        return self.manager

    async def start_api(self, certificate=None, key=None, client_ca=None) -> str:
        """The manager's API on a free port (over TLS given a certificate and key, requiring client
        certificates given a client CA); its base URL. Tokens of each role are in `self.secrets`."""
        book = TokenBook(self.store)
        self.secrets = {role: book.create(name, role) for role, name in PEOPLE.items()}
        self.secrets["tenant"] = book.create("tenant", "tenant", ("v1",))
        port = free_port()
        self.runs = RunBook(self.tmp_path / "runs")
        self.app = make_app(self.manager, book, BUILTIN_PROFILES, runs=self.runs)
        self.api = ApiServer(self.app, "127.0.0.1", port, certificate, key, client_ca)
        await self.api.start()
        return f"http{'s' if certificate else ''}://127.0.0.1:{port}"

    def headers(self, role: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secrets[role]}"}

    def _spawn(self, name, run) -> None:
        stop = asyncio.Event()
        self.tasks[name] = (stop, asyncio.create_task(run(stop)))

    async def stop(self, name: str, crash: bool = False) -> None:
        """Stop a part: cleanly, or at once (its task cancelled wherever it was)."""
        stop, task = self.tasks.pop(name)
        if crash:
            task.cancel()
        else:
            stop.set()
        (ended,) = await asyncio.gather(task, return_exceptions=True)
        if name == "manager":
            await self.manager_bus.close()
            self.store.close()
        else:
            for bus in [self.cluster_bus, *self.agent_buses]:
                await bus.close()
            self.cluster.close()
        if not crash and isinstance(ended, Exception):  # a part that died on its own fails the test
            raise RuntimeError(f"the {name} task ended with an error") from ended

    async def stop_all(self) -> None:
        if getattr(self, "api", None) is not None:
            await self.api.stop()
            self.runs.stop()
        failed = []
        for name in list(self.tasks):
            try:
                await self.stop(name)
            except RuntimeError as err:
                failed.append(err)
        if failed:
            raise failed[0]


def vm_hosts(cluster: SimCluster) -> dict[str, str]:
    sim = cluster.sim
    return {sim.vm_names[v]: sim.host_names[sim.vms.host[v]] for v in range(len(sim.vm_names))}


class StackThread:
    """A Stack on an event loop of its own thread, for tests that block (a browser driven by Selenium)."""

    def __init__(self, server, tmp_path, mode: str = "approve", **manager_options):
        """manager_options: the Manager's others (forecasts, ...)."""
        import threading

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.stack = Stack(server, tmp_path, mode=mode)
        self.manager_options = manager_options

    def call(self, coroutine, timeout: float = 60.0):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def start(self) -> str:
        async def up():
            await self.stack.start_cluster()
            await self.stack.start_manager(**self.manager_options)
            return await self.stack.start_api()

        return self.call(up())

    def stop(self) -> None:
        self.call(self.stack.stop_all())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()
