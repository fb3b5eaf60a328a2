"""Actions over the bus, against a real nats-server with JetStream started by the tests: each action id is
applied at most once and its outcome reaches the manager, across restarts of the agent, the manager and
the bus itself."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from bus_helpers import connect, until
from helpers import make_scenario
from sova.drivers.sim import SimDriver
from sova.model.actions import FAILED, OK, REJECTED, Migrate, SetCpu, SetIoLimit
from sova.service.agent_actions import INTERRUPTED, ActionAgent
from sova.service.bus import Bus, BusError, action_subject
from sova.service.dispatch import ActionDispatch
from sova.service.ledger import Ledger
from sova.service.natsd import NatsServer
from sova.service.reporting import ReportCollector, publish_report
from sova.service.state import StateStore
from sova.service.wire import encode_action
from sova.sim.engine import Simulator


def sim_driver() -> SimDriver:
    scenario = make_scenario(vms=[{"name": "vm1", "host": "h1"}, {"name": "vm2", "host": "h1"}])
    return SimDriver(Simulator(scenario))


async def agent_on(
    server: NatsServer, driver: SimDriver, ledger_path: Path, ack_wait: float = 30.0
) -> tuple[Bus, ActionAgent]:
    bus = await connect(server, "agent-h1")
    agent = ActionAgent(bus, "h1", driver, Ledger(ledger_path), ack_wait)
    await agent.start()
    return bus, agent


async def manager_on(server: NatsServer) -> tuple[Bus, ActionDispatch]:
    bus = await connect(server, "manager")
    dispatch = ActionDispatch(bus)
    await dispatch.start()
    return bus, dispatch


def test_an_action_sent_to_a_host_is_applied_by_its_agent_and_its_outcome_comes_back(nats_server, tmp_path):
    driver = sim_driver()

    async def scenario():
        manager_bus, dispatch = await manager_on(nats_server)
        agent_bus, agent = await agent_on(nats_server, driver, tmp_path / "ledger.db")
        action_id = await dispatch.send("h1", SetCpu(vm="vm2", weight=512, cap=1.5, reason="test"))

        async def answered():
            await agent.step(0.2)
            await dispatch.collect(0.2)
            return action_id in dispatch.outcomes

        await until(answered)
        await agent_bus.close()
        await manager_bus.close()
        return dispatch.outcomes[action_id], agent.applied

    outcome, applied = asyncio.run(scenario())
    assert outcome.status == OK and applied == 1
    snap = driver.observe()
    assert snap.vm_weight[snap.vms.index("vm2")] == 512


def test_an_action_sent_twice_with_one_id_is_applied_once_and_answered_once(nats_server, tmp_path):
    driver = sim_driver()

    async def scenario():
        manager_bus, dispatch = await manager_on(nats_server)
        agent_bus, agent = await agent_on(nats_server, driver, tmp_path / "ledger.db")
        action = SetIoLimit(vm="vm1", iops=300)
        action_id = await dispatch.send("h1", action)
        assert await dispatch.send("h1", action, action_id) == action_id  # a manager that sends again
        # and the same id once more, past the bus's duplicate check (as after a long outage)
        await agent.bus.js.publish(action_subject("h1"), encode_action(action_id, action))
        outcomes = []

        async def settled():
            await agent.step(0.2)
            outcomes.extend(await dispatch.collect(0.2))
            return len(outcomes) >= 1 and agent.applied == 1 and not (await agent.step(0.2))

        await until(settled)
        outcomes.extend(await dispatch.collect(0.5))
        await agent_bus.close()
        await manager_bus.close()
        return outcomes, agent.applied

    outcomes, applied = asyncio.run(scenario())
    assert applied == 1
    assert [o.status for _, o in outcomes] == [OK]  # the re-sent outcome is one the bus already stored


def test_an_agent_that_stopped_while_applying_does_not_apply_again_and_says_so(nats_server, tmp_path):
    """The agent recorded the action and stopped before acknowledging it (or while the driver applied
    it): the bus delivers it again to the restarted agent, which must not apply it a second time."""
    driver = sim_driver()
    ledger_path = tmp_path / "ledger.db"

    async def scenario():
        manager_bus, dispatch = await manager_on(nats_server)
        action_id = await dispatch.send("h1", SetIoLimit(vm="vm1", iops=300))
        # the first agent's life: the action fetched and recorded, then the agent is gone
        first_bus = await connect(nats_server, "agent-h1")
        reader = await first_bus.reader(action_subject("h1"), durable="agent-h1", ack_wait=1.0)
        (message,) = await reader.fetch(batch=1, timeout=10)
        Ledger(ledger_path).begin(action_id, message.data)
        await first_bus.client.close()
        # the restarted agent
        agent_bus, agent = await agent_on(nats_server, driver, ledger_path)

        async def answered():
            await agent.step(0.3)
            await dispatch.collect(0.2)
            return action_id in dispatch.outcomes

        await until(answered)
        redelivered = []

        async def taken_again():  # after its 1 s ack wait the action comes again; it applies nothing
            redelivered.append(await agent.step(0.3))
            return sum(redelivered) >= 1

        await until(taken_again)
        late = await dispatch.collect(0.5)
        await agent_bus.close()
        await manager_bus.close()
        return dispatch.outcomes[action_id], agent.applied, late

    outcome, applied, late = asyncio.run(scenario())
    assert applied == 0 and outcome.status == FAILED and outcome.message == INTERRUPTED
    assert late == []  # its outcome was sent again, and the bus kept the one it had
    assert driver.sim.storage.controls.limit[0] == 0  # vm1's limit: never applied


def test_an_outcome_sent_while_the_manager_was_down_reaches_it_when_it_returns(nats_server, tmp_path):
    driver = sim_driver()

    async def scenario():
        manager_bus, dispatch = await manager_on(nats_server)
        action_id = await dispatch.send("h1", SetCpu(vm="vm1", weight=256, cap=0.0))
        await manager_bus.close()  # the manager goes away with the action sent
        agent_bus, agent = await agent_on(nats_server, driver, tmp_path / "ledger.db")

        async def applied():
            await agent.step(0.2)
            return agent.applied == 1 and not agent.ledger.unpublished()

        await until(applied)
        returned_bus, returned = await manager_on(nats_server)  # the same durable reader as before

        async def answered():
            await returned.collect(0.3)
            return action_id in returned.outcomes

        await until(answered)
        await agent_bus.close()
        await returned_bus.close()
        return returned.outcomes[action_id]

    assert asyncio.run(scenario()).status == OK


def test_an_outcome_the_store_could_not_record_comes_again_within_seconds_not_after_the_ack_wait(nats_server, tmp_path):
    driver = sim_driver()
    store = StateStore(f"sqlite:///{tmp_path / 'manager.db'}")
    record = store.record_outcome
    failures = []

    def record_once_failing(*args):
        if not failures:  # the database restarting when the first outcome comes
            failures.append(time.monotonic())
            raise sa.exc.OperationalError("UPDATE actions", {}, ConnectionRefusedError("restarting"))
        return record(*args)

    store.record_outcome = record_once_failing

    async def scenario():
        manager_bus = await connect(nats_server, "manager")
        dispatch = ActionDispatch(manager_bus, store)
        await dispatch.start()
        action_id = await dispatch.send("h1", SetCpu(vm="vm1", weight=256, cap=0.0))
        agent_bus, agent = await agent_on(nats_server, driver, tmp_path / "ledger.db")

        async def answered():
            await agent.step(0.2)
            with contextlib.suppress(sa.exc.OperationalError):
                await dispatch.collect(0.2)
            return action_id in dispatch.outcomes

        await until(answered, timeout=10)  # the consumer's acknowledgement wait is 30 s
        await agent_bus.close()
        await manager_bus.close()
        return action_id, time.monotonic() - failures[0]

    action_id, after_failure = asyncio.run(scenario())
    assert after_failure < 10
    assert store.action_states([action_id]) == {action_id: OK}
    store.close()


def test_an_action_stored_before_the_bus_crashed_is_applied_after_it_restarts(nats_server, tmp_path):
    driver = sim_driver()

    async def scenario():
        manager_bus, dispatch = await manager_on(nats_server)
        action_id = await dispatch.send("h1", SetIoLimit(vm="vm2", iops=120))
        nats_server.stop(kill=True)  # SIGKILL: what JetStream acknowledged is on disk
        nats_server.start()  # the same port and store; both clients reconnect by themselves
        agent_bus, agent = await agent_on(nats_server, driver, tmp_path / "ledger.db")

        async def answered():
            await agent.step(0.3)
            await dispatch.collect(0.3)
            return action_id in dispatch.outcomes

        await until(answered, timeout=40)
        await agent_bus.close()
        await manager_bus.close()
        return dispatch.outcomes[action_id]

    assert asyncio.run(scenario()).status == OK
    assert driver.sim.storage.controls.limit[1] == 120  # vm2's


def test_a_host_name_that_cannot_be_a_subject_is_refused_by_name():
    with pytest.raises(BusError, match=r"host name 'rack1\.h1' cannot be a bus subject"):
        action_subject("rack1.h1")


def test_connecting_to_a_bus_that_is_not_there_says_where():
    async def scenario():
        await Bus.connect("nats://127.0.0.1:1", name="nobody", timeout=1.0)

    with pytest.raises(BusError, match=r"cannot connect to the bus at nats://127\.0\.0\.1:1"):
        asyncio.run(scenario())


def test_a_migration_is_polled_until_it_ends_and_then_answered(nats_server, tmp_path):
    scenario = make_scenario(
        hosts=[{"name": "h1"}, {"name": "h2"}],
        vms=[{"name": "vm1", "host": "h1", "memory": "1GiB"}],
    )
    sim = Simulator(scenario)
    driver = SimDriver(sim)

    async def scenario_run():
        manager_bus, dispatch = await manager_on(nats_server)
        agent_bus, agent = await agent_on(nats_server, driver, tmp_path / "ledger.db")
        action_id = await dispatch.send("h1", Migrate(vm="vm1", dst="h2"))
        seen_running = []

        async def answered():
            await agent.step(0.1)
            seen_running.append(bool(agent.running))
            sim.step()  # the simulated clock moves between the agent's steps
            await dispatch.collect(0.1)
            return action_id in dispatch.outcomes

        await until(answered, timeout=60)
        await agent_bus.close()
        await manager_bus.close()
        return dispatch.outcomes[action_id], any(seen_running), agent.ledger.unfinished("running")

    outcome, was_running, left = asyncio.run(scenario_run())
    assert outcome.status == OK and was_running and left == []
    snap = driver.observe()
    assert snap.hosts[snap.vm_host[snap.vms.index("vm1")]] == "h2"


def test_a_malformed_action_is_answered_as_rejected_and_never_delivered_again(nats_server, tmp_path):
    driver = sim_driver()

    async def scenario():
        manager_bus, dispatch = await manager_on(nats_server)
        agent_bus, agent = await agent_on(nats_server, driver, tmp_path / "ledger.db", ack_wait=0.5)
        bad = b'{"id": "bad1", "kind": "set-cpu", "vm": "vm1", "weight": "heavy", "cap": 0}'
        await manager_bus.publish(action_subject("h1"), "bad1", bad)

        async def answered():
            await agent.step(0.2)
            await dispatch.collect(0.2)
            return "bad1" in dispatch.outcomes

        await until(answered)
        again = await agent.step(1.5)  # three times its ack wait: an unsettled message would be back
        await agent_bus.close()
        await manager_bus.close()
        return dispatch.outcomes["bad1"], agent.applied, again

    outcome, applied, again = asyncio.run(scenario())
    assert outcome.status == REJECTED and "weight: expected a whole number" in outcome.message
    assert applied == 0 and again == 0


def test_the_managers_merge_of_the_agents_reports_is_the_clusters_observation(nats_server):
    scenario = make_scenario(
        hosts=[{"name": "h1"}, {"name": "h2"}],
        vms=[{"name": "a", "host": "h1"}, {"name": "b", "host": "h2"}],
        workloads=[{"vm": "a", "kind": "netperf", "peer": "b", "rate": "1Gbps"}],
    )
    driver = SimDriver(Simulator(scenario))
    for _ in range(3):
        driver.sim.step()

    async def scenario_run():
        manager_bus = await connect(nats_server, "manager")
        collector = ReportCollector(manager_bus)
        await collector.start()
        agents = [await connect(nats_server, f"agent-{host}") for host in ("h1", "h2")]
        sizes = [
            await publish_report(bus, driver.observe(), host) for bus, host in zip(agents, ("h1", "h2"), strict=True)
        ]
        await manager_bus.client.publish("sova.report.h2", b"garbage")  # refused, the good report stays

        async def both():
            await asyncio.sleep(0)  # let the subscription's callbacks run
            await manager_bus.client.flush()
            return len(collector.latest) == 2 and collector.refused == 1

        await until(both)
        for bus in [*agents, manager_bus]:
            await bus.close()
        return collector.snapshot(), sizes

    merged, sizes = asyncio.run(scenario_run())
    snap = driver.observe()
    assert merged.hosts == snap.hosts and merged.vms == snap.vms and all(s < 1500 for s in sizes)
    assert list(merged.flow_src) == list(snap.flow_src) and list(merged.flow_dst) == list(snap.flow_dst)
    np.testing.assert_array_equal(merged.counters.cpu_time, snap.counters.cpu_time)


def test_a_restarted_manager_knows_what_awaits_an_outcome_and_sends_it_again_once(nats_server, tmp_path):
    """The manager recorded an action and stopped before it reached the bus; another reached the bus and
    its outcome came while the manager was down. The restarted manager, on the same state, gets both
    outcomes, and sending the second again applies nothing twice."""
    driver = sim_driver()
    url = f"sqlite:///{tmp_path / 'manager.db'}"

    async def scenario():
        bus = await connect(nats_server, "manager")
        first = ActionDispatch(bus, StateStore(url))
        await first.start()
        reached = await first.send("h1", SetCpu(vm="vm1", weight=300, cap=0.0))
        lost = SetIoLimit(vm="vm2", iops=77)
        first.store.record_sent("lost1", "h1", lost.kind, encode_action("lost1", lost))  # then it stopped
        await bus.close()

        agent_bus, agent = await agent_on(nats_server, driver, tmp_path / "ledger.db")
        bus = await connect(nats_server, "manager")
        second = ActionDispatch(bus, StateStore(url))
        await second.start()
        assert {s.action_id for s in second.store.unanswered()} == {reached, "lost1"}
        assert await second.send_unanswered() == 2

        async def answered():
            await agent.step(0.2)
            await second.collect(0.2)
            return not second.store.unanswered()

        await until(answered)
        await agent_bus.close()
        await bus.close()
        return second, agent.applied, reached

    second, applied, reached = asyncio.run(scenario())
    assert applied == 2  # each once, though `reached` was sent twice
    assert second.store.outcome(reached)[0] == OK and second.store.outcome("lost1")[0] == OK
    assert driver.sim.storage.controls.limit[1] == 77


def test_an_action_that_reaches_its_agent_after_its_expiry_is_refused_and_never_applied(nats_server, tmp_path):
    driver = sim_driver()

    async def scenario():
        manager_bus, dispatch = await manager_on(nats_server)
        agent_bus, agent = await agent_on(nats_server, driver, tmp_path / "ledger.db")
        late = await dispatch.send("h1", SetCpu(vm="vm1", weight=300), expires=time.time() - 30)
        fresh = await dispatch.send("h1", SetCpu(vm="vm2", weight=300), expires=time.time() + 60)
        outcomes = {}

        async def both():
            await agent.step(0.2)
            outcomes.update(await dispatch.collect(0.2))
            return len(outcomes) == 2

        await until(both)
        await agent_bus.close()
        await manager_bus.close()
        return outcomes[late], outcomes[fresh], agent.applied

    late, fresh, applied = asyncio.run(scenario())
    assert late.status == REJECTED and "expired" in late.message and "30 s after" in late.message
    assert fresh.status == OK and applied == 1


def test_the_ledger_forgets_only_actions_finished_and_published_long_ago(tmp_path):
    ledger = Ledger(tmp_path / "ledger.db")
    for action_id in ("old", "recent", "unpublished", "running"):
        ledger.begin(action_id, b"{}")
    for action_id in ("old", "recent", "unpublished"):
        ledger.finish(action_id, b"{}")
    ledger.published("old")
    ledger.published("recent")
    ledger.db.execute("UPDATE actions SET finished_at = finished_at - 8 * 86400 WHERE id IN ('old', 'unpublished')")
    assert ledger.prune(7 * 86400) == 1
    kept = {row[0] for row in ledger.db.execute("SELECT id FROM actions")}
    ledger.close()
    assert kept == {"recent", "unpublished", "running"}


class _Stubborn:
    """A client whose first connection swallows a cancellation and retries until its retries are switched
    off, as nats-py's can (its flush and reconnect waits catch CancelledError)."""

    def __init__(self) -> None:
        self.options = {"allow_reconnect": True, "max_reconnect_attempts": -1}
        self.is_connected = False
        self.attempts = 0

    async def connect(self) -> None:
        while self.options["allow_reconnect"] and self.attempts < 200:  # 10 s at most: a test fails, not hangs
            self.attempts += 1
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.05)
        raise ConnectionRefusedError("no server")


def test_the_first_connection_times_out_even_when_the_client_swallows_its_cancellation():
    from sova.service.bus import _first_connection

    client = _Stubborn()

    async def attempt() -> tuple[float, asyncio.Future]:
        started = time.monotonic()
        connecting = asyncio.ensure_future(client.connect())
        with pytest.raises(TimeoutError, match=r"no connection within 0\.3 s"):
            await asyncio.wait_for(_first_connection(client, connecting, 0.3), 10)  # the guard: not for ever
        return time.monotonic() - started, connecting

    took, connecting = asyncio.run(attempt())
    assert took < 5 and client.attempts > 1 and connecting.done()  # the retries ended with the attempt


def test_a_caller_cancelled_while_connecting_takes_the_connection_attempt_down_with_it():
    from sova.service.bus import _first_connection

    client = _Stubborn()

    async def attempt() -> asyncio.Future:
        connecting = asyncio.ensure_future(client.connect())
        waiting = asyncio.ensure_future(_first_connection(client, connecting, 60.0))
        await asyncio.sleep(0.2)  # the attempt retries meanwhile
        waiting.cancel()  # a daemon told to stop while it connects
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await asyncio.wait({connecting}, timeout=5)
        return connecting

    connecting = asyncio.run(attempt())
    assert connecting.done() and not client.options["allow_reconnect"] and client.options["max_reconnect_attempts"] > 0
