"""The manager and the agents over a real nats-server: a simulated cluster's hotspot is found from the
agents' reports and relieved by a migration the manager sends; approvals; a manager restarted in the
middle of a plan takes it up where it stood, and no action is applied twice."""

from __future__ import annotations

import asyncio

import pytest

from service_stack import Stack, vm_hosts, wait_for
from sova.service.manager import ManagerError


def test_a_hotspot_seen_in_the_agents_reports_is_relieved_by_a_migration_sent_over_the_bus(nats_server, tmp_path):
    async def run():
        stack = Stack(nats_server, tmp_path)
        cluster = await stack.start_cluster()
        manager = await stack.start_manager()
        try:
            await wait_for(lambda: manager.store.action_counts().get(("migrate", "ok"), 0) >= 1)
            await wait_for(lambda: manager.store.plans(state="succeeded")[1] >= 1)
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
            await wait_for(lambda: manager.store.plans(state="pending")[1] >= 1)
            (first,) = [r.id for r in manager.store.plans(state="pending")[0]]
            rounds = manager.runtime.knowledge.latest.time
            await wait_for(lambda: manager.runtime.knowledge.latest.time > rounds + 30)  # three rounds more
            assert manager.store.plans(state="pending")[1] == 1  # the same plan again is not added again
            assert all(h == "h1" for h in vm_hosts(cluster).values())  # nothing ran while it waited
            rejected = await manager.decide(first, "reject", by="alice")
            with pytest.raises(ManagerError, match=f"plan {first} is rejected"):
                await manager.decide(first, "approve", by="alice")
            await wait_for(lambda: manager.store.plans(state="pending")[1] >= 1)  # the next round's
            (second,) = [r.id for r in manager.store.plans(state="pending")[0]]
            approved = await manager.decide(second, "approve", by="bob")
            await wait_for(lambda: manager.store.plan(second).state == "succeeded")
            row = manager.store.plan(second)
            return rejected, approved, row, vm_hosts(cluster)
        finally:
            await stack.stop_all()

    rejected, approved, row, hosts = asyncio.run(run())
    assert rejected["state"] == "rejected" and approved["state"] == "ongoing"
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
            await wait_for(lambda: successor.store.plan(plan).state == "succeeded")
            applied = sum(agent.actions.applied for agent in cluster.agents)
            return successor.store.plan(plan), applied, vm_hosts(cluster), successor.store.action_counts()
        finally:
            await stack.stop_all()

    row, applied, hosts, counts = asyncio.run(run())
    assert applied == 1 and counts[("migrate", "ok")] == 1
    assert hosts[row.actions[0]["vm"]] == row.actions[0]["dst"]


def test_a_standby_shows_the_cluster_and_leads_with_its_history_and_the_slos_the_store_holds(nats_server, tmp_path):
    """Two managers on one store and bus: the standby's Knowledge follows the reports (its API has the
    hosts); the leader stops cleanly, the standby leads at once, keeps that history, and puts the store's
    SLOs in the agents' bucket again."""
    from bus_helpers import connect
    from sova.service.lease import Lease
    from sova.service.manager import Manager
    from sova.service.slo_relay import SloFollower
    from sova.service.state import StateStore

    async def run():
        stack = Stack(nats_server, tmp_path)
        await stack.start_cluster()
        leader = await stack.start_manager()
        leader.lease = Lease(stack.manager_bus, "first", ttl=3.0)
        await wait_for(lambda: leader.leading and leader.lease.held())
        leader.store.put_slo("v1", {"throughput": [100, 200]}, "acme")  # the store holds it, the bucket not
        bus = await connect(nats_server, "standby")
        store = StateStore(stack.url)
        standby = Manager(bus, store, stack.policies, leader.control, tick=0.1, lease=Lease(bus, "second", ttl=3.0))
        stop = asyncio.Event()
        task = asyncio.create_task(standby.run(stop))
        try:
            await wait_for(lambda: len(standby.runtime.knowledge) >= 3)
            watched = (standby.leading, len(standby.runtime.knowledge), standby.runtime.knowledge.latest.hosts)
            await stack.stop("manager")  # a clean stop releases the lease
            await wait_for(lambda: standby.leading)
            kept = len(standby.runtime.knowledge)
            slos = await SloFollower(bus).poll()
            return watched, kept, slos
        finally:
            stop.set()
            await asyncio.gather(task, return_exceptions=True)
            await bus.close()
            store.close()
            await stack.stop_all()

    (was_leading, seen, hosts), kept, slos = asyncio.run(run())
    assert not was_leading and seen >= 3 and hosts == ("h1", "h2")
    assert kept >= seen  # its history came along
    assert list(slos) == ["v1"] and slos["v1"].throughput == (100, 200)
