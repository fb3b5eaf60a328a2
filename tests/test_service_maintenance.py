"""Maintenance through the service: `sova host drain` against a real manager, its API and a simulated
cluster's agents on a real nats-server; the drained host empties, takes no VM, and a manager restarted
on the same store keeps it in maintenance until `sova host release`."""

from __future__ import annotations

import asyncio
import sys

import httpx

from helpers import make_scenario
from service_stack import Stack, vm_hosts, wait_for


async def sova_host(*argv: str) -> tuple[int, str, str]:
    """`sova host ...` as a command of its own: its exit code, stdout and stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sova.cli", "host", *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    return process.returncode, out.decode(), err.decode()


def three_hosts():
    """Three hosts, two quiet VMs on h1: nothing for the policies to do but what the operator asks."""
    return make_scenario(
        scenario={"duration": 3600},
        hosts=[{"name": "h{i}", "count": 3, "cores": 4, "memory": "16GiB"}],
        vms=[{"name": "v{i}", "count": 2, "host": "h1", "memory": "2GiB"}],
        workloads=[{"vm": "v*", "kind": "lookbusy", "duty": 0.2, "util": 0.2}],
    )


def test_a_drained_host_empties_stays_in_maintenance_across_a_restart_and_is_released(nats_server, tmp_path):
    async def run():
        stack = Stack(nats_server, tmp_path, scenario=three_hosts(), policies=[])
        await stack.start_cluster()
        await stack.start_manager()
        base = await stack.start_api()
        cli = ["--api", base, "--token", stack.secrets["operator"]]
        try:
            await wait_for(lambda: stack.manager.leading and len(stack.manager.runtime.knowledge) >= 2)
            viewer = await sova_host("drain", "h1", "--api", base, "--token", stack.secrets["viewer"])
            unknown = await sova_host("drain", "h9", *cli)
            drained = await sova_host("drain", "h1", "--wait", "--timeout", "120", *cli)
            where = vm_hosts(stack.cluster)
            async with httpx.AsyncClient(base_url=base, headers=stack.headers("viewer")) as client:
                hosts = {h["name"]: h for h in (await client.get("/api/v1/hosts")).json()}
                audit = (await client.get("/api/v1/audit", params={"limit": 500})).json()["items"]
            # a manager started again on the same store keeps h1 in maintenance
            await stack.stop("manager")
            await stack.start_manager()
            await wait_for(lambda: stack.manager.leading)
            kept = [r.hosts for r in stack.manager.runtime.knowledge.rules.rules]
            released = await sova_host("release", "h1", *cli)
            again = await sova_host("release", "h1", *cli)
            return viewer, unknown, drained, where, hosts, audit, kept, released, again
        finally:
            await stack.stop_all()

    viewer, unknown, drained, where, hosts, audit, kept, released, again = asyncio.run(run())
    assert viewer[0] == 2 and "needs admin or operator" in viewer[2]
    assert unknown[0] == 2 and "no host 'h9' has reported" in unknown[2]
    assert drained[0] == 0 and "h1: 0 VM(s) left" in drained[1], drained
    assert "h1" not in where.values()
    assert hosts["h1"]["maintenance"] and hosts["h1"]["vms"] == 0 and not hosts["h2"]["maintenance"]
    notes = [e["reason"] for e in audit if e["event"] == "note" and "maintenance" in e["reason"]]
    assert notes == ["h1 put into maintenance by otto"]  # once
    moves = [e for e in audit if e["event"] == "finished" and e["policy"] == "keep-rules"]
    assert len(moves) == 2 and all(e["status"] == "ok" for e in moves)
    assert kept == [("h1",)]
    assert released[0] == 0 and "h1 released by otto" in released[1]
    assert again[0] == 2 and "h1 is not in maintenance" in again[2]


def test_the_managers_rules_move_a_vm_that_breaks_one_and_a_drain_adds_to_them(nats_server, tmp_path):
    """`sova manager --rules`: keep-rules, through the agents, moves one of two VMs a must anti-affinity rule
    keeps apart off their shared host; a drain later keeps both the operator's rule and its own."""
    from sova.model.placement_rules import PlacementRule, RuleBook

    apart = RuleBook([PlacementRule("apart", "anti-affinity", ("v1", "v2"))])

    async def run():
        stack = Stack(nats_server, tmp_path, scenario=three_hosts(), policies=[])
        await stack.start_cluster()
        manager = await stack.start_manager(rules=apart)
        try:
            await wait_for(lambda: len(set(vm_hosts(stack.cluster).values())) == 2, timeout=120)
            await manager.maintain("h3", True, "operator")
            rules = sorted(r.name for r in manager.runtime.knowledge.rules.rules)
            return vm_hosts(stack.cluster), rules
        finally:
            await stack.stop_all()

    where, rules = asyncio.run(run())
    assert where["v1"] != where["v2"]
    assert rules == ["apart", "maintenance of h3"]
