"""Per-agent bus users against a real nats-server: an agent's user reports for its host and takes its
host's actions, and the server refuses it anything of another host's (publishing as it, reading its
actions); the service runs end to end with a user per agent; `sova bus config` writes users nats-server
takes."""

from __future__ import annotations

import asyncio
import logging
import subprocess

import nats.errors
import pytest

from bus_helpers import connect_as, until
from helpers import make_scenario
from service_stack import Stack, vm_hosts, wait_for
from sova.cli import main
from sova.drivers.sim import SimDriver
from sova.model.actions import OK, Outcome, SetCpu
from sova.service import natsd
from sova.service.agent_actions import ActionAgent
from sova.service.bus import action_subject, outcome_subject
from sova.service.bus_users import agent_user, manager_user
from sova.service.dispatch import ActionDispatch
from sova.service.ledger import Ledger
from sova.service.natsd import NatsServer
from sova.service.reporting import ReportCollector, publish_report
from sova.service.wire import encode_outcome
from sova.sim.engine import Simulator

USERS = {
    "manager": manager_user("manager", "manager-pw"),
    "h1": agent_user("agent-h1", ["h1"], "h1-pw"),
    "h2": agent_user("agent-h2", ["h2"], "h2-pw"),
}


@pytest.fixture
def bus_with_users(tmp_path):
    """A real nats-server whose users are the managers' and h1's and h2's agents' (USERS)."""
    server = NatsServer(tmp_path / "nats", users=tuple(USERS.values())).start()
    yield server
    server.stop()


def two_host_driver() -> SimDriver:
    scenario = make_scenario(
        hosts=[{"name": "h1"}, {"name": "h2"}],
        vms=[{"name": "vm1", "host": "h1"}, {"name": "vm2", "host": "h2"}],
    )
    return SimDriver(Simulator(scenario))


def violations(caplog) -> list[str]:
    """The permission violations the server reported to the clients (their error callbacks log them)."""
    return [r.getMessage() for r in caplog.records if "permissions violation" in r.getMessage()]


async def manager_and_h1_agent(server, driver, tmp_path):
    """The manager's bus (its report collector and action dispatch started) and h1's agent on its own user."""
    manager = await connect_as(server, USERS["manager"], streams=True)
    collector, dispatch = ReportCollector(manager), ActionDispatch(manager)
    await collector.start()
    await dispatch.start()
    h1 = await connect_as(server, USERS["h1"])
    agent = ActionAgent(h1, "h1", driver, Ledger(tmp_path / "h1.db"))
    await agent.start()
    return manager, collector, dispatch, h1, agent


def test_an_agents_user_reports_for_its_host_and_takes_its_hosts_actions(bus_with_users, tmp_path, caplog):
    driver = two_host_driver()

    async def scenario():
        manager, collector, dispatch, h1, agent = await manager_and_h1_agent(bus_with_users, driver, tmp_path)
        await publish_report(h1, driver.observe(), "h1")
        action_id = await dispatch.send("h1", SetCpu(vm="vm1", weight=512, cap=1.0, reason="test"))

        async def answered():
            await agent.step(0.2)
            await dispatch.collect(0.2)
            return action_id in dispatch.outcomes and "h1" in collector.latest

        await until(answered)
        for bus in (h1, manager):
            await bus.close()
        return dispatch.outcomes[action_id], agent.applied

    with caplog.at_level(logging.WARNING, "sova.service.bus"):
        outcome, applied = asyncio.run(scenario())
    assert outcome.status == OK and applied == 1
    assert violations(caplog) == []


def test_an_agents_user_cannot_report_or_answer_for_another_host(bus_with_users, tmp_path, caplog):
    driver = two_host_driver()

    async def scenario():
        manager, collector, dispatch, h1, agent = await manager_and_h1_agent(bus_with_users, driver, tmp_path)
        for_h2 = await dispatch.send("h2", SetCpu(vm="vm2", weight=512, cap=1.0, reason="test"))
        for_h1 = await dispatch.send("h1", SetCpu(vm="vm1", weight=512, cap=1.0, reason="test"))
        # h1 speaks as h2: a report, and a forged outcome of h2's action, stored by JetStream if let through
        await publish_report(h1, driver.observe(), "h2")
        forged = encode_outcome(for_h2, Outcome(OK, "forged by h1"))
        await h1.client.publish(outcome_subject("h2"), forged, headers={"Nats-Msg-Id": f"outcome-{for_h2}"})
        await publish_report(h1, driver.observe(), "h1")  # then as itself: these come after the forgeries

        async def own_answered():
            await agent.step(0.2)
            await dispatch.collect(0.2)
            return for_h1 in dispatch.outcomes and "h1" in collector.latest

        await until(own_answered)
        await manager.client.flush()
        for bus in (h1, manager):
            await bus.close()
        return set(collector.latest), dispatch.outcomes, for_h1

    with caplog.at_level(logging.WARNING, "sova.service.bus"):
        reported, outcomes, for_h1 = asyncio.run(scenario())
    assert reported == {"h1"}  # h2's report, sent before h1's, never reached the manager
    assert list(outcomes) == [for_h1]  # nor did the outcome forged for h2's action, sent before h1's own
    said = violations(caplog)
    assert any('publish to "sova.report.h2"' in line for line in said)
    assert any('publish to "sova.outcome.h2"' in line for line in said)


def test_an_agents_user_cannot_read_another_hosts_actions_which_stay_for_that_host(bus_with_users, tmp_path, caplog):
    driver = two_host_driver()

    async def scenario():
        manager = await connect_as(bus_with_users, USERS["manager"], streams=True)
        dispatch = ActionDispatch(manager)
        await dispatch.start()
        h1 = await connect_as(bus_with_users, USERS["h1"])
        seen = []

        async def take(message) -> None:
            seen.append(message)

        await h1.client.subscribe(action_subject("h2"), cb=take)  # plain NATS: the publish as it happens
        action_id = await dispatch.send("h2", SetCpu(vm="vm2", weight=512, cap=1.0, reason="test"))
        refused = []
        for durable in ("agent-h2", "agent-h1"):  # h2's consumer, or one of its own on h2's actions
            with pytest.raises(nats.errors.TimeoutError):  # the server drops the request: no answer
                await h1.reader(action_subject("h2"), durable)
            refused.append(durable)
        h2 = await connect_as(bus_with_users, USERS["h2"])
        agent = ActionAgent(h2, "h2", driver, Ledger(tmp_path / "h2.db"))
        await agent.start()

        async def answered():
            await agent.step(0.2)
            await dispatch.collect(0.2)
            return action_id in dispatch.outcomes

        await until(answered)
        await h1.client.flush()
        for bus in (h1, h2, manager):
            await bus.close()
        return refused, seen, dispatch.outcomes[action_id], agent.applied

    with caplog.at_level(logging.WARNING, "sova.service.bus"):
        refused, seen, outcome, applied = asyncio.run(scenario())
    assert refused == ["agent-h2", "agent-h1"] and seen == []
    assert outcome.status == OK and applied == 1  # h2's agent took its action: h1 consumed nothing of it
    said = violations(caplog)
    assert any("consumer.info.sova_actions.agent-h2" in line.lower() for line in said)
    assert any("consumer.create.sova_actions.agent-h1.sova.action.h2" in line.lower() for line in said)
    assert any('subscription to "sova.action.h2"' in line for line in said)


def test_the_service_relieves_a_hotspot_with_a_bus_user_per_agent_and_nothing_refused(tmp_path):
    users = {
        "manager": manager_user("manager", "manager-pw"),
        "h1": agent_user("agent-h1", ["h1"], "h1-pw"),
        "h2": agent_user("agent-h2", ["h2"], "h2-pw"),
    }
    server = NatsServer(tmp_path / "nats", users=tuple(users.values())).start()

    async def run():
        stack = Stack(server, tmp_path, users=users)
        cluster = await stack.start_cluster()  # before the manager: its agents wait for the streams it makes
        manager = await stack.start_manager()
        try:
            await wait_for(lambda: manager.store.action_counts().get(("migrate", "ok"), 0) >= 1)
            return vm_hosts(cluster), manager.store.action_counts()
        finally:
            await stack.stop_all()

    try:
        hosts, counts = asyncio.run(run())
    finally:
        server.stop()
    assert sum(1 for h in hosts.values() if h == "h2") == counts[("migrate", "ok")] >= 1  # each applied once
    assert "Violation" not in (tmp_path / "nats" / "nats.log").read_text()  # each part did only what it may


def test_sova_bus_config_writes_owner_only_users_nats_server_takes_and_keeps_each_password(tmp_path, capsys):
    directory = tmp_path / "nats" / "sova"
    assert main(["bus", "config", "--hosts", "node1,node2", "--dir", str(directory)]) == 0
    printed = capsys.readouterr().out
    first = {path.name: path.read_text() for path in directory.glob("*.password")}
    assert main(["bus", "config", "--hosts", "node1,node2,node3", "--dir", str(directory)]) == 0
    second = {path.name: path.read_text() for path in directory.glob("*.password")}
    assert main(["bus", "config", "--hosts", "node1,node 4", "--dir", str(tmp_path / "refused")]) == 2
    refused = capsys.readouterr().err
    config = tmp_path / "nats" / "nats.conf"  # nats-server reads an include relative to its own file
    config.write_text(f'listen: "127.0.0.1:{natsd.free_port()}"\ninclude ./sova/authorization.conf\n')
    test = subprocess.run([natsd.binary(), "-t", "-c", str(config)], capture_output=True, text=True)

    assert set(first) == {"manager.password", "agent-node1.password", "agent-node2.password"}
    assert {name: second[name] for name in first} == first  # adding a host changed no other's password
    assert "agent-node3.password" in second and len(set(second.values())) == 4
    made = [directory, *directory.iterdir()]
    assert [oct(p.stat().st_mode & 0o777) for p in made] == ["0o700"] + ["0o600"] * (len(made) - 1)
    assert test.returncode == 0, test.stderr
    assert "--nats-user agent-node1 --nats-password-file" in printed
    assert "host name 'node 4' cannot be a bus subject" in refused and not (tmp_path / "refused").exists()
