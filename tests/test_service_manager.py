"""The manager and the agents over a real nats-server: a simulated cluster's hotspot is found from the
agents' reports and relieved by a migration the manager sends; approvals; a manager restarted in the
middle of a plan takes it up where it stood, and no action is applied twice."""

from __future__ import annotations

import asyncio

import pytest

from bus_helpers import connect
from helpers import make_scenario
from sova.control.profiles import check_profile
from sova.model.scenario import ControlSpec, ProfileSpec
from sova.model.schema import Reader
from sova.service.agent import SimCluster
from sova.service.manager import Manager, ManagerError
from sova.service.state import StateStore

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


class Stack:
    """A simulated cluster's agents and one manager, each on its own bus connection, as tasks."""

    def __init__(self, server, tmp_path, mode: str = "auto"):
        self.server, self.tmp_path, self.mode = server, tmp_path, mode
        self.url = f"sqlite:///{tmp_path / 'manager.db'}"
        self.tasks: dict[str, tuple[asyncio.Event, asyncio.Task]] = {}

    async def start_cluster(self) -> SimCluster:
        self.cluster_bus = await connect(self.server, "agents")
        self.cluster = SimCluster(self.cluster_bus, hotspot_scenario(), self.tmp_path / "ledgers", speed=SPEED)
        self._spawn("cluster", self.cluster.run)
        return self.cluster

    async def start_manager(self) -> Manager:
        self.manager_bus = await connect(self.server, "manager")
        self.store = StateStore(self.url)
        control = ControlSpec(hold_down=60.0)
        self.manager = Manager(self.manager_bus, self.store, threshold_policies(), control, self.mode, tick=0.1)
        self._spawn("manager", self.manager.run)
        return self.manager

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
        await asyncio.gather(task, return_exceptions=True)
        if name == "manager":
            await self.manager_bus.close()
            self.store.close()
        else:
            await self.cluster_bus.close()
            self.cluster.close()

    async def stop_all(self) -> None:
        for name in list(self.tasks):
            await self.stop(name)


def vm_hosts(cluster: SimCluster) -> dict[str, str]:
    sim = cluster.sim
    return {sim.vm_names[v]: sim.host_names[sim.vm_host[v]] for v in range(len(sim.vm_names))}


def test_a_hotspot_seen_in_the_agents_reports_is_relieved_by_a_migration_sent_over_the_bus(nats_server, tmp_path):
    async def run():
        stack = Stack(nats_server, tmp_path)
        cluster = await stack.start_cluster()
        manager = await stack.start_manager()
        try:
            await wait_for(lambda: manager.store.action_counts().get(("migrate", "ok"), 0) >= 1)
            await wait_for(lambda: manager.store.plans(state="done")[1] >= 1)
            return vm_hosts(cluster), manager.store.action_counts(), manager.store.audit(event="finished")
        finally:
            await stack.stop_all()

    hosts, counts, (finished, _) = asyncio.run(run())
    assert "h2" in hosts.values()  # a VM left the hot host
    migrated = counts[("migrate", "ok")]
    assert sum(1 for h in hosts.values() if h == "h2") == migrated  # each migration applied once, none lost
    assert any(e["action"].startswith("migrate") and e["status"] == "ok" for e in finished)


def test_a_plan_waits_for_approval_and_runs_only_once_approved(nats_server, tmp_path):
    async def run():
        stack = Stack(nats_server, tmp_path, mode="approve")
        cluster = await stack.start_cluster()
        manager = await stack.start_manager()
        try:
            await wait_for(lambda: manager.store.plans(state="pending")[1] >= 2)
            first, second = sorted(r.id for r in manager.store.plans(state="pending")[0])[:2]
            assert all(h == "h1" for h in vm_hosts(cluster).values())  # nothing ran while it waited
            rejected = await manager.decide(first, "reject", by="alice")
            with pytest.raises(ManagerError, match=f"plan {first} is rejected"):
                await manager.decide(first, "approve", by="alice")
            approved = await manager.decide(second, "approve", by="bob")
            await wait_for(lambda: manager.store.plan(second).state == "done")
            row = manager.store.plan(second)
            return rejected, approved, row, vm_hosts(cluster)
        finally:
            await stack.stop_all()

    rejected, approved, row, hosts = asyncio.run(run())
    assert rejected["state"] == "rejected" and approved["state"] == "executing"
    assert row.decided_by == "bob" and row.actions[0]["kind"] == "migrate"
    assert hosts[row.actions[0]["vm"]] == row.actions[0]["dst"]


def test_a_manager_restarted_in_the_middle_of_a_plan_takes_it_up_and_applies_nothing_twice(nats_server, tmp_path):
    """The manager crashes right after sending an approved plan's migration; its successor, on the same
    state, polls the migration to its end. The agent applied it once."""

    async def run():
        stack = Stack(nats_server, tmp_path, mode="approve")
        cluster = await stack.start_cluster()
        manager = await stack.start_manager()
        try:
            await wait_for(lambda: manager.store.plans(state="pending")[1] >= 1)
            plan = manager.store.plans(state="pending")[0][0].id
            await manager.decide(plan, "approve", by="alice")  # sent before decide returns
            await stack.stop("manager", crash=True)
            successor = await stack.start_manager()
            await wait_for(lambda: successor.store.plan(plan).state == "done")
            applied = sum(agent.actions.applied for agent in cluster.agents)
            return successor.store.plan(plan), applied, vm_hosts(cluster), successor.store.action_counts()
        finally:
            await stack.stop_all()

    row, applied, hosts, counts = asyncio.run(run())
    assert applied == 1 and counts[("migrate", "ok")] == 1
    assert hosts[row.actions[0]["vm"]] == row.actions[0]["dst"]
