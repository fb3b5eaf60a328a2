"""Tenants' storage SLOs in service mode: set through the manager's API, kept in its store, carried to the
agents by the bus's bucket, held by the agents' SLO engine (SASLO's SEE, a local loop), and their status
and the engine's audit entries carried back; on a real nats-server, the simulated cluster's storage
behind the agents. Unit tests of the agent's loops and of malformed messages beside them."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from helpers import make_scenario
from service_stack import Stack, wait_for
from sova.control.audit import AuditEntry
from sova.control.profiles import check_profile
from sova.drivers.sim import SimDriver
from sova.model.scenario import ControlSpec, ProfileSpec
from sova.model.schema import Reader
from sova.model.storage_slo import StorageSlo
from sova.service.agent import LocalSide
from sova.service.local_audit import _entry
from sova.service.local_loops import LocalLoops, SharedObservation, own_part
from sova.service.slo_relay import _status
from sova.service.tokens import TokenBook
from sova.sim.engine import Simulator

SPEED = 10.0  # simulated seconds per wall second: SEE's 25 ms epochs keep up on a busy machine


def storage_scenario():
    """Two mail servers (filebench varmail) on one host, on an SSD that serves either far above 600 IOPS."""
    return make_scenario(
        scenario={"duration": 3600},
        simulator={"storage_step": 0.025, "io_limiter": "time-stamp"},  # SEE's 25 ms loop needs SASLO's limiter
        storage=[{"name": "ssd"}],
        vms=[{"name": "db{i}", "count": 2, "host": "h1", "storage": "ssd"}],
        workloads=[{"kind": "filebench", "vm": "db*", "personality": "varmail"}],
    )


def see_profile():
    """Threshold migration (the manager's) and SEE (the agents')."""
    reader = Reader("test")
    policies = check_profile(reader, ProfileSpec("mixed", ("threshold-migration", "see")))
    assert not reader.problems
    return policies


# ---------------------------------------------------------------------------------------------- unit
def test_the_agents_loops_hold_only_the_vms_here_with_a_throughput_slo_and_rebind_when_that_set_changes():
    sim = Simulator(storage_scenario(), seed=1)
    loops = LocalLoops(SimDriver(sim), see_profile(), ControlSpec(), {"db1": "ssd", "db2": "ssd"})
    assert [p.name for p in loops.policies] == ["see"] and loops.period == pytest.approx(0.025)
    layout = SimDriver(sim).observe()
    see = loops.controllers[0]
    loops.follow({"db1": StorageSlo(throughput=(300, 500)), "elsewhere": StorageSlo(throughput=(1, 2))}, layout)
    assert see.vms == ("db1",) and see.server_of == {"db1": "ssd"}
    loops.follow({"db1": StorageSlo(throughput=(300, 500)), "db2": StorageSlo(sc_rate=(80, 90))}, layout)
    assert see.vms == ("db1",)  # an SLO without a throughput range holds nothing
    see.target[:] = 450
    loops.follow({"db1": StorageSlo(throughput=(350, 500))}, layout)  # a changed SLO: taken up, not rebound
    assert see.vms == ("db1",) and list(see.target) == [350]
    loops.follow({"db1": StorageSlo(throughput=(350, 500)), "db2": StorageSlo(throughput=(100, 200))}, layout)
    assert see.vms == ("db1", "db2") and list(see.target) == [350, 100]


def test_a_report_and_a_monitor_tick_due_together_share_one_observation_of_the_host(monkeypatch):
    import sova.service.local_loops as local_loops

    clock = [100.0]
    monkeypatch.setattr(local_loops.time, "monotonic", lambda: clock[0])
    driver = SimDriver(Simulator(storage_scenario(), seed=1))
    calls = []
    real = driver.observe
    driver.observe = lambda: calls.append(clock[0]) or real()
    shared = SharedObservation(driver, max_age=0.5)
    first = shared.observe()
    clock[0] += 0.4
    assert shared.observe() is first and shared.now() == driver.now()  # the rest goes to the driver
    clock[0] += 0.1
    assert shared.observe() is not first and calls == [100.0, 100.5]


def test_a_real_hosts_local_loops_see_only_that_host_its_flows_to_peers_leaving_it():
    from test_host_report import busy_cluster

    snap = busy_cluster().observe()  # a -> b (h1 -> h2), c -> outside, b -> a (h2 -> h1)
    own = own_part(snap, "h1")
    assert own.hosts == ("h1",) and own.vms == ("a", "c")
    sources = [own.vms[i] for i in own.flow_src]
    assert set(sources) <= {"a", "c"} and all(d == -1 for d in own.flow_dst)  # b is h2's: leaving h1
    shared = SharedObservation(SimDriver(Simulator(storage_scenario(), seed=1)), max_age=0.5, host="h1")
    assert shared.observe().hosts == ("h1",) and shared.full().hosts == ("h1",)


def test_a_real_hosts_local_entries_carry_the_wall_clock_whatever_clock_its_driver_keeps():
    sim = Simulator(storage_scenario(), seed=1)  # its clock starts at 0, as a libvirt driver's at its agent's start
    loops = LocalLoops(SimDriver(sim), see_profile(), ControlSpec(), {"db1": "ssd", "db2": "ssd"})
    slo = StorageSlo(throughput=(400, 600), sc_rate=(80, 90), pf_ratio=(5, 10))  # SEE raises its target at 30 s
    loops.follow({"db1": slo}, SimDriver(sim).observe())
    side = LocalSide(bus=None, loops=loops, own="h1")  # nothing is sent here: the entries stay queued
    while not side.audit.queue and sim.t < 120:
        sim.step()
        side.tick(lambda entry: "h1")
    sent = json.loads(side.audit.queue[0][2])
    assert sent["policy"] == "see" and abs(sent["time"] - time.time()) < 5 and sent["time"] <= sent["wall_time"]


def test_the_manager_takes_no_malformed_audit_entry_or_status_from_an_agent():
    good = AuditEntry(5.0, 0, "applied", "see", "set-io-target db1 iops=420", "db1", "raised")
    entry, wall_time = _entry(json.dumps(asdict(good) | {"wall_time": 1.7e9}).encode(), "h1")
    assert entry.details == {"host": "h1"} and entry.action == good.action and wall_time == 1.7e9
    untimed = {k: v for k, v in asdict(good).items() if k != "time"}
    for bad in ([], untimed | {"time": "noon"}, {"time": 1.0}, asdict(good) | {"wall_time": "noon"}):
        with pytest.raises((ValueError, TypeError)):
            _entry(json.dumps(bad).encode(), "h1")
    assert _status("db1", {"sc_rate": 90})["pf_ratio"] is None
    for bad in ({"sc_rate": float("nan")}, {"throughput": "many"}, [1]):
        with pytest.raises(ValueError, match="db1"):
            _status("db1", bad)


# ---------------------------------------------------------------------------------------------- on the bus
def run_stack(tmp_path, nats_server, body):
    async def run():
        stack = Stack(nats_server, tmp_path, scenario=storage_scenario(), policies=see_profile(), speed=SPEED)
        await stack.start_cluster()
        await stack.start_manager()
        base = await stack.start_api()
        acme = TokenBook(stack.store).create("acme", "tenant", ("db1",))
        try:
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                await wait_for(lambda: stack.manager.leading and "db1" in stack.manager.known_vms())
                return await body(stack, client, {"Authorization": f"Bearer {acme}"})
        finally:
            await stack.stop_all()

    return asyncio.run(run())


def db1_io_ops_and_report_time(stack) -> tuple[float, float]:
    """db1's IO operations as /metrics shows them, and the (simulated) time of h1's report they come from,
    read together: nothing else runs on the event loop between the two."""
    text = stack.app.state.metrics.exposition().decode()
    reported = stack.manager.collector.latest["h1"][0].time
    ops = [
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "sova_vm_io_ops_total" and sample.labels["vm"] == "db1"
    ]
    assert len(ops) == 2, ops  # reads and writes
    return sum(ops), reported


def test_an_slo_a_tenant_sets_through_the_api_is_held_by_the_agents_engine_and_its_status_and_io_come_back(
    nats_server, tmp_path
):
    async def body(stack, client, acme):
        put = await client.put("/api/v1/slos/db1", json={"throughput": [500, 500]}, headers=acme)

        async def status():
            return (await client.get("/api/v1/slos/db1", headers=acme)).json()["status"]

        held = []

        def near_500():  # three reports in a row within 5 % of the target
            return len(held) >= 3 and all(abs(s["throughput"] - 500) <= 25 for s in held[-3:])

        deadline = asyncio.get_running_loop().time() + 90
        while not near_500() and asyncio.get_running_loop().time() < deadline:
            current = await status()
            if current is not None and current["throughput"] is not None and current not in held:
                held.append(current)
            await asyncio.sleep(0.2)
        listed = (await client.get("/api/v1/slos", headers=acme)).json()
        audit = (await client.get("/api/v1/audit", params={"event": "slo-set"}, headers=stack.headers("viewer"))).json()
        metrics = (await client.get("/metrics", headers=stack.headers("viewer"))).text
        first = db1_io_ops_and_report_time(stack)
        await wait_for(lambda: stack.manager.collector.latest["h1"][0].time >= first[1] + 20)
        return put, held, listed, audit, metrics, (first, db1_io_ops_and_report_time(stack))

    put, held, listed, audit, metrics, io = run_stack(tmp_path, nats_server, body)
    assert put.status_code == 200, put.text
    assert put.json()["slo"]["throughput"] == [500, 500] and put.json()["set_by"] == "acme"
    assert len(held) >= 3 and all(abs(s["throughput"] - 500) <= 25 for s in held[-3:]), held
    assert held[-1]["target"] == 500 and held[-1]["host"] == "h1"
    assert [row["vm"] for row in listed] == ["db1"]
    assert [(e["target"], e["reason"]) for e in audit["items"]] == [("db1", "by acme")]
    samples = {
        (sample.name, sample.labels["vm"]): sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
        if "vm" in sample.labels and family.name.startswith(("sova_vm_io", "sova_vm_slo"))
    }
    assert samples[("sova_vm_slo_target_io_ops_per_second", "db1")] == 500
    assert samples[("sova_vm_slo_compliance_target_ratio", "db1")] == 0  # the SLO's sc_rate range is 0-100 %
    # the IO counter grew at the 500 IOPS the engine holds, over the reports' (simulated) clock
    (ops_before, time_before), (ops_after, time_after) = io
    assert abs((ops_after - ops_before) / (time_after - time_before) - 500) <= 25, io


def test_the_engines_own_changes_reach_the_managers_audit_trail_with_their_host(nats_server, tmp_path):
    async def body(stack, client, acme):
        # an SSD serves the mail server far above 600 IOPS: SEE raises the target every T_R (30 s)
        settings = {"throughput": [400, 600], "sc_rate": [80, 90], "pf_ratio": [5, 10]}
        assert (await client.put("/api/v1/slos/db1", json=settings, headers=acme)).status_code == 200

        def raised():
            rows, _ = stack.store.audit(event="applied", target="db1")
            return [r for r in rows if r["policy"] == "see"]

        await wait_for(lambda: len(raised()) >= 2, timeout=120)
        query = {"event": "applied", "target": "db1"}
        shown = (await client.get("/api/v1/audit", params=query, headers=stack.headers("viewer"))).json()["items"]
        return raised(), shown, time.time(), stack.cluster.clock0

    raised, shown, now, clock0 = run_stack(tmp_path, nats_server, body)
    assert [r["action"].split("iops=")[1].split()[0] for r in raised[:2]] == ["420", "440"]
    assert all(r["details"]["host"] == "h1" and "throughput target raised" in r["reason"] for r in raised)
    # shown at the wall-clock time the agent made them, beside the simulated cluster's (the manager's own clock)
    assert all(now - 60 < r["time"] <= now and abs(r["sim_time"] / SPEED - r["time"]) < 60 for r in shown)
    assert len(shown) >= 2 and all(r["sim_time"] >= clock0 for r in shown)


def test_slo_calls_are_checked_whole_and_a_tenant_reaches_only_its_own_vms(nats_server, tmp_path):
    async def body(stack, client, acme):
        operator = stack.headers("operator")
        answers = {
            "other tenant's vm": await client.put("/api/v1/slos/db2", json={"throughput": [1, 2]}, headers=acme),
            "viewer sets": await client.put(
                "/api/v1/slos/db1", json={"throughput": [1, 2]}, headers=stack.headers("viewer")
            ),
            "inverted": await client.put("/api/v1/slos/db1", json={"throughput": [600, 400]}, headers=acme),
            "no throughput": await client.put("/api/v1/slos/db1", json={"sc_rate": [80, 90]}, headers=acme),
            "percent": await client.put(
                "/api/v1/slos/db1", json={"throughput": [1, 2], "sc_rate": [80, 190]}, headers=acme
            ),
            "infinite": await client.put(
                "/api/v1/slos/db1",
                content=b'{"throughput": [1, Infinity]}',
                headers=acme | {"content-type": "application/json"},
            ),
            "unknown field": await client.put("/api/v1/slos/db1", json={"iops": [1, 2]}, headers=acme),
            "unknown vm": await client.put("/api/v1/slos/nope", json={"throughput": [1, 2]}, headers=operator),
            "operator sets": await client.put("/api/v1/slos/db2", json={"throughput": [100, 200]}, headers=operator),
            "tenant reads other": await client.get("/api/v1/slos/db2", headers=acme),
            "clear unset": await client.delete("/api/v1/slos/db1", headers=acme),
            "operator clears": await client.delete("/api/v1/slos/db2", headers=operator),
            "read cleared": await client.get("/api/v1/slos/db2", headers=operator),
        }
        return answers, stack.store.slos()

    answers, kept = run_stack(tmp_path, nats_server, body)
    codes = {name: answer.status_code for name, answer in answers.items()}
    assert codes == {
        "other tenant's vm": 403,
        "viewer sets": 403,
        "inverted": 422,
        "no throughput": 422,
        "percent": 422,
        "infinite": 422,
        "unknown field": 422,
        "unknown vm": 404,
        "operator sets": 200,
        "tenant reads other": 403,
        "clear unset": 404,
        "operator clears": 204,
        "read cleared": 404,
    }
    assert "throughput lower bound 600 is above the upper bound 400" in answers["inverted"].json()["detail"]
    assert "sc_rate upper bound must be within 0-100 %" in answers["percent"].json()["detail"]
    assert kept == {}  # nothing refused was kept; the one set was cleared
