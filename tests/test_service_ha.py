"""HA restart in service mode: a real manager over a simulated cluster's agents on a real nats-server.
A host that stops reporting stays in the manager's view as last heard (``host_seen``), is declared failed
after the grace, is fenced (by its agent if that still answers, else by an operator's confirmation through
`sova host fenced`), and only then are its VMs restarted elsewhere."""

from __future__ import annotations

import asyncio

import httpx

from service_stack import Stack, vm_hosts, wait_for
from test_service_maintenance import sova_host, three_hosts


def restarted_off_h1(stack: Stack) -> bool:
    where = vm_hosts(stack.cluster)
    running = stack.cluster.sim.faults.restart_state
    return all(where[vm] != "h1" for vm in ("v1", "v2")) and all(running(v) == "running" for v in (0, 1))


async def audit_of(base: str, stack: Stack) -> list[dict]:
    async with httpx.AsyncClient(base_url=base, headers=stack.headers("viewer")) as client:
        return (await client.get("/api/v1/audit", params={"limit": 500})).json()["items"]


async def audit_until(base: str, stack: Stack, holds, what: str, timeout: float = 90.0) -> list[dict]:
    """The audit trail once `holds(entries)`; fails naming `what` after `timeout` s."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not holds(entries := await audit_of(base, stack)):
        assert asyncio.get_running_loop().time() < deadline, f"no {what} in the audit trail after {timeout:g} s"
        await asyncio.sleep(0.2)
    return entries


def said_unfenced(entries: list[dict]) -> bool:
    return any("could not be fenced" in e["reason"] for e in entries)


def restarts_ended(entries: list[dict]) -> bool:
    return sum(e["action"].startswith("restart-vm") and e["event"] == "finished" for e in entries) == 2


def test_a_silent_host_is_fenced_by_its_agent_before_its_vms_restart_elsewhere(nats_server, tmp_path):
    async def run():
        stack = Stack(nats_server, tmp_path, scenario=three_hosts(), policies=[])
        await stack.start_cluster()
        await stack.start_manager()
        base = await stack.start_api()
        try:
            await wait_for(lambda: stack.manager.leading and len(stack.manager.runtime.knowledge) >= 2)
            sim = stack.cluster.sim
            sim.faults.silence(0, 3600.0, sim.t)  # h1 runs on, its VMs too, but reports nothing
            audit = await audit_until(base, stack, restarts_ended, "two restarts ended")
            await wait_for(lambda: restarted_off_h1(stack))
            async with httpx.AsyncClient(base_url=base, headers=stack.headers("viewer")) as client:
                hosts = {h["name"]: h for h in (await client.get("/api/v1/hosts")).json()}
            return audit, hosts, stack.store.fenced(), bool(sim.faults.failed[0])
        finally:
            await stack.stop_all()

    audit, hosts, fenced, powered_off = asyncio.run(run())
    notes = [e["reason"] for e in audit if e["event"] == "note" and e["target"] == "h1"]
    assert notes[0].startswith("h1 declared failed: no report since") and notes[1] == "h1 fenced: h1 powered off"
    fence = [e for e in audit if e["action"].startswith("fence-host") and e["event"] == "finished"]
    assert [e["status"] for e in fence] == ["ok"]
    restarts = [e for e in audit if e["action"].startswith("restart-vm") and e["event"] == "finished"]
    assert sorted(e["target"] for e in restarts) == ["v1", "v2"] and all(e["status"] == "ok" for e in restarts)
    assert min(e["time"] for e in restarts) > fence[0]["time"]
    assert powered_off and list(fenced) == ["h1"]
    assert hosts["h1"]["failed"] and hosts["h1"]["fenced"] and hosts["h1"]["vms"] == 0
    assert not hosts["h2"]["failed"] and hosts["h2"]["vms"] + hosts["h3"]["vms"] == 2


def test_a_crashed_hosts_vms_wait_for_an_operator_to_confirm_it_is_off_then_restart(nats_server, tmp_path):
    async def run():
        stack = Stack(nats_server, tmp_path, scenario=three_hosts(), policies=[])
        await stack.start_cluster()
        await stack.start_manager(fence_wait=1.0)
        base = await stack.start_api()
        cli = ["--api", base, "--token", stack.secrets["operator"]]
        try:
            await wait_for(lambda: stack.manager.leading and len(stack.manager.runtime.knowledge) >= 2)
            early = await sova_host("fenced", "h2", *cli)
            stack.cluster.sim.crash_host(0)  # its agent is down with it: no one answers the fence
            await audit_until(base, stack, said_unfenced, "failed fence")
            still = vm_hosts(stack.cluster)
            viewer = await sova_host("fenced", "h1", "--api", base, "--token", stack.secrets["viewer"])
            confirmed = await sova_host("fenced", "h1", *cli)
            audit = await audit_until(base, stack, restarts_ended, "two restarts ended")
            await wait_for(lambda: restarted_off_h1(stack))
            return early, still, viewer, confirmed, audit, stack.store.fenced()
        finally:
            await stack.stop_all()

    early, still, viewer, confirmed, audit, fenced = asyncio.run(run())
    assert early[0] == 2 and "h2 is not declared failed" in early[2]
    assert still["v1"] == still["v2"] == "h1"  # not restarted while nobody knew h1 was off
    assert viewer[0] == 2 and "needs admin or operator" in viewer[2]
    assert confirmed[0] == 0 and "h1 fenced as otto confirmed; its 2 VM(s) start elsewhere" in confirmed[1]
    fence = [e for e in audit if e["action"].startswith("fence-host") and e["event"] == "finished"]
    assert len(fence) == 1 and fence[0]["status"] == "failed" and "did not answer within 1 s" in fence[0]["message"]
    notes = [e["reason"] for e in audit if e["event"] == "note" and e["target"] == "h1"]
    assert "h1 fenced: otto confirmed it is off" in notes
    restarts = [e for e in audit if e["action"].startswith("restart-vm") and e["event"] == "finished"]
    assert sorted(e["target"] for e in restarts) == ["v1", "v2"] and all(e["status"] == "ok" for e in restarts)
    assert fenced["h1"]["how"] == "otto confirmed it is off"
