"""The manager's REST API on a real uvicorn, in front of a manager and a simulated cluster's agents on a
real nats-server: tokens and roles, the cluster's state, plans approved through the API, the audit
trail, its times (the wall clock's, the simulated cluster's beside them), and Prometheus' exposition."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import httpx
from prometheus_client.parser import text_string_to_metric_families

from service_stack import SPEED, Stack, wait_for


def run_with_api(tmp_path, nats_server, body, mode: str = "approve", speed: float = SPEED):
    async def run():
        stack = Stack(nats_server, tmp_path, mode=mode, speed=speed)
        await stack.start_cluster()
        await stack.start_manager()
        base = await stack.start_api()
        try:
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                return await body(stack, client)
        finally:
            await stack.stop_all()

    return asyncio.run(run())


def test_only_healthz_answers_without_a_token_and_each_role_reaches_what_it_may(nats_server, tmp_path):
    async def body(stack, client):
        await wait_for(lambda: stack.manager.leading)
        health = await client.get("/healthz")
        anonymous = [(await client.get(path)).status_code for path in ("/metrics", "/api/v1/hosts", "/api/v1/plans")]
        forged = await client.get("/api/v1/hosts", headers={"Authorization": "Bearer sova_not-a-token"})
        viewer = await client.get("/api/v1/hosts", headers=stack.headers("viewer"))
        viewer_decides = await client.post("/api/v1/plans/1/approve", headers=stack.headers("viewer"))
        tenant = await client.get("/api/v1/plans", headers=stack.headers("tenant"))
        return health, anonymous, forged, viewer, viewer_decides, tenant

    health, anonymous, forged, viewer, viewer_decides, tenant = run_with_api(tmp_path, nats_server, body)
    assert health.status_code == 200 and health.json()["leader"] is True
    assert anonymous == [401, 401, 401] and forged.status_code == 401
    assert viewer.status_code == 200
    assert viewer_decides.status_code == 403 and "needs admin or operator" in viewer_decides.json()["detail"]
    assert tenant.status_code == 403


def test_the_api_shows_the_cluster_the_agents_report(nats_server, tmp_path):
    async def body(stack, client):
        viewer = stack.headers("viewer")
        await wait_for(lambda: len(stack.manager.runtime.knowledge) >= 12)
        hosts = (await client.get("/api/v1/hosts", headers=viewer)).json()
        vms = (await client.get("/api/v1/vms", headers=viewer)).json()
        vfs = (await client.get("/api/v1/vfs", headers=viewer)).json()
        series = (await client.get("/api/v1/hosts/series", params={"seconds": 60}, headers=viewer)).json()
        found = stack.manager.runtime.findings
        await wait_for(lambda: any(f.notable for policy in list(found.values()) for f in policy))
        findings = (await client.get("/api/v1/findings", headers=viewer)).json()
        return hosts, vms, vfs, series, findings

    hosts, vms, vfs, series, findings = run_with_api(tmp_path, nats_server, body)
    by_name = {h["name"]: h for h in hosts}
    assert set(by_name) == {"h1", "h2"} and by_name["h1"]["vms"] == 4 and by_name["h2"]["vms"] == 0
    assert by_name["h1"]["cpu_utilization"] > 0.9 > by_name["h2"]["cpu_utilization"]  # four busy VMs on 4 cores
    assert sorted(v["name"] for v in vms) == ["v1", "v2", "v3", "v4"] and all(v["cpu_cores"] > 0.5 for v in vms)
    assert [row["host"] for row in vfs] == ["h1", "h2"]
    assert len(series["times"]) >= 5 and series["hosts"]["h1"][-1] > 0.9
    assert any(f["kind"] == "hotspot" and f["host"] == "h1" and f["notable"] for f in findings)


def test_a_plan_is_approved_through_the_api_and_its_audit_trail_and_metrics_show_it(nats_server, tmp_path):
    async def body(stack, client):
        operator, viewer = stack.headers("operator"), stack.headers("viewer")
        await wait_for(lambda: stack.manager.store.plans(state="pending")[1] >= 1)
        pending = (await client.get("/api/v1/plans", params={"state": "pending"}, headers=viewer)).json()
        plan = pending["items"][-1]["id"]
        approved = await client.post(f"/api/v1/plans/{plan}/approve", headers=operator)
        again = await client.post(f"/api/v1/plans/{plan}/approve", headers=operator)
        missing = await client.post("/api/v1/plans/999999/approve", headers=operator)
        await wait_for(lambda: stack.manager.store.plan(plan).state == "succeeded")
        row = (await client.get(f"/api/v1/plans/{plan}", headers=viewer)).json()
        trail = (await client.get("/api/v1/audit", params={"plan": plan, "limit": 50}, headers=viewer)).json()
        metrics = await client.get("/metrics", headers=viewer)
        return approved, again, missing, row, trail, metrics

    approved, again, missing, row, trail, metrics = run_with_api(tmp_path, nats_server, body)
    assert approved.status_code == 200 and approved.json()["state"] == "ongoing"
    assert again.status_code == 409 and "not waiting for approval" in again.json()["detail"]
    assert missing.status_code == 404
    assert row["state"] == "succeeded" and row["decided_by"] == "otto"
    events = [e["event"] for e in trail["items"]]
    assert events[0] == "finding" and "pending" in events and "approved" in events and events[-1] == "finished"
    assert trail["items"][-1]["status"] == "ok"
    assert [e["message"] for e in trail["items"] if e["event"] == "approved"] == ["approved by otto"]
    families = {f.name: f for f in text_string_to_metric_families(metrics.text)}
    migrations = {s.labels["outcome"]: s.value for s in families["sova_migration_outcomes"].samples}
    assert migrations == {"ok": 1}
    assert {s.labels["kind"]: s.value for s in families["sova_actions_sent"].samples} == {"migrate": 1}
    assert not any(s.name.endswith("_created") for f in families.values() for s in f.samples)
    assert all(
        f.type == "counter" for name, f in families.items() if name in ("sova_actions_sent", "sova_action_outcomes")
    )
    assert families["sova_decision_round_seconds"].samples[-1].value > 0  # the histogram's count
    assert {s.labels["state"] for s in families["sova_plans"].samples} >= {"succeeded"}
    utilization = {s.labels["host"]: s.value for s in families["sova_host_cpu_utilization_ratio"].samples}
    assert set(utilization) == {"h1", "h2"}


def test_at_speed_20_every_time_the_api_shows_is_the_wall_clocks_and_the_sim_fields_the_clusters(nats_server, tmp_path):
    async def body(stack, client):
        operator, viewer = stack.headers("operator"), stack.headers("viewer")
        await wait_for(lambda: stack.manager.store.plans(state="pending")[1] >= 1)
        plan = (await client.get("/api/v1/plans", params={"state": "pending"}, headers=viewer)).json()["items"][-1]
        await client.post(f"/api/v1/plans/{plan['id']}/approve", headers=operator)
        await wait_for(lambda: stack.manager.store.plan(plan["id"]).state == "succeeded")
        decided = (await client.get(f"/api/v1/plans/{plan['id']}", headers=viewer)).json()
        trail = (await client.get("/api/v1/audit", params={"limit": 1000}, headers=viewer)).json()["items"]
        findings = (await client.get("/api/v1/findings", headers=viewer)).json()
        series = (await client.get("/api/v1/hosts/series", headers=viewer)).json()
        return decided, trail, findings, series, time.time(), stack.cluster.clock0

    decided, trail, findings, series, now, clock0 = run_with_api(tmp_path, nats_server, body)
    shown = [(decided["created"], decided["sim_created"]), (decided["decided_at"], decided["sim_decided_at"])]
    shown += [(row["time"], row["sim_time"]) for row in trail + findings]
    shown += list(zip(series["times"], series["sim_times"], strict=True))
    tokens = [row for row in trail if row["event"] == "token-created"]
    loop = [(wall, sim) for wall, sim in shown if sim is not None]
    assert len(loop) == len(shown) - len(tokens) and len(tokens) == 4 and findings and series["times"]
    assert all(now - 60 < wall <= now for wall, _ in shown)  # within a minute of the wall clock
    assert {datetime.fromtimestamp(wall, UTC).year for wall, _ in shown} == {datetime.now(UTC).year}
    # the simulated clock starts at the wall clock times 20 and runs 20 times as fast
    assert all(clock0 <= sim and abs(sim / SPEED - wall) < 60 for wall, sim in loop)
    assert all(row["sim_time"] is None for row in tokens)  # the API's own events: on the wall clock only


def test_on_the_wall_clock_the_api_shows_no_simulated_times(nats_server, tmp_path):
    async def body(stack, client):
        viewer = stack.headers("viewer")
        found = stack.manager.runtime.findings
        await wait_for(lambda: any(f.notable for policy in list(found.values()) for f in policy))
        findings = (await client.get("/api/v1/findings", headers=viewer)).json()
        series = (await client.get("/api/v1/hosts/series", headers=viewer)).json()
        trail = (await client.get("/api/v1/audit", params={"limit": 1000}, headers=viewer)).json()["items"]
        return findings, series, trail, time.time()

    findings, series, trail, now = run_with_api(tmp_path, nats_server, body, speed=1.0)
    rows = findings + trail
    assert rows and all(now - 60 < row["time"] <= now and row["sim_time"] is None for row in rows)
    assert series["times"] and series["sim_times"] is None


def test_bad_parameters_are_refused_with_the_field_named_and_change_nothing(nats_server, tmp_path):
    async def body(stack, client):
        operator = stack.headers("operator")
        await wait_for(lambda: stack.manager.leading)
        before = stack.manager.store.plan_counts()
        answers = [
            await client.get("/api/v1/plans", params={"limit": 0}, headers=operator),
            await client.get("/api/v1/plans", params={"state": "nonsense"}, headers=operator),
            await client.get("/api/v1/audit", params={"offset": -1}, headers=operator),
            await client.post("/api/v1/plans/0/approve", headers=operator),
            await client.post("/api/v1/plans/1/explode", headers=operator),
            await client.post(f"/api/v1/plans/{2**40}/approve", headers=operator),
        ]
        return answers, before, stack.manager.store.plan_counts()

    answers, before, after = run_with_api(tmp_path, nats_server, body, mode="dry-run")
    assert [a.status_code for a in answers] == [422] * 6
    fields = [a.json()["detail"][0]["loc"][-1] for a in answers]
    assert fields == ["limit", "state", "offset", "plan_id", "verdict", "plan_id"]
    assert set(before) <= set(after)  # nothing was decided (dry-run plans may have come meanwhile)


def test_a_host_series_over_any_span_has_at_most_the_points_asked_for():
    from helpers import make_scenario
    from sova.drivers.sim import SimDriver
    from sova.model.knowledge import Knowledge
    from sova.service import views
    from sova.service.cluster_clock import ClusterClock
    from sova.sim.engine import Simulator

    driver = SimDriver(Simulator(make_scenario(vms=[{"name": "a", "host": "h1"}])))
    knowledge = Knowledge()
    for _ in range(30):
        driver.sim.step()
        knowledge.add(driver.observe())
    for seconds in (1e-300, 0.5, 10.0, 1e9):
        series = views.host_series(knowledge, seconds, ClusterClock(), points=20)
        assert len(series["times"]) <= 20 and all(len(v) == len(series["times"]) for v in series["hosts"].values())
    assert len(views.host_series(knowledge, 1e9, ClusterClock(), points=20)["times"]) == 20


def test_the_schema_and_the_reference_want_a_token_and_a_report_on_a_subject_no_host_has_is_refused(
    nats_server, tmp_path
):
    async def body(stack, client):
        anonymous = [(await client.get(path)).status_code for path in ("/openapi.json", "/docs")]
        viewer = [
            (await client.get(path, headers=stack.headers("viewer"))).status_code for path in ("/openapi.json", "/docs")
        ]
        refused = stack.manager.collector.refused
        await stack.manager_bus.client.publish("sova.report.<b>h1</b>", b"x")
        await stack.manager_bus.client.flush()
        await wait_for(lambda: stack.manager.collector.refused > refused)
        return anonymous, viewer

    anonymous, viewer = run_with_api(tmp_path, nats_server, body, mode="dry-run")
    assert anonymous == [401, 401] and viewer == [200, 200]


def test_readyz_says_ready_with_every_check_and_names_the_one_that_fails_when_the_bus_is_gone(nats_server, tmp_path):
    async def body(stack, client):
        await wait_for(lambda: stack.manager.leading and stack.manager.collector.fresh())
        ready = await client.get("/readyz")  # no token: a load balancer's probe
        await asyncio.to_thread(nats_server.stop, kill=True)
        await wait_for(lambda: not stack.manager_bus.client.is_connected)
        gone = await client.get("/readyz")
        health = await client.get("/healthz")  # alive all the same
        await asyncio.to_thread(nats_server.start)  # the same port: the clients reconnect by themselves
        back = []

        async def ready_again() -> bool:
            back[:] = [await client.get("/readyz")]
            return back[0].status_code == 200

        deadline = asyncio.get_running_loop().time() + 60
        while not await ready_again() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.2)
        return ready, gone, health, back[0]

    ready, gone, health, back = run_with_api(tmp_path, nats_server, body, mode="auto")
    assert ready.status_code == 200 and ready.json()["ready"] is True
    assert set(ready.json()["checks"]) == {"bus", "store", "lease", "reports"}
    assert ready.json()["checks"]["lease"]["detail"] == "held: this manager leads"
    assert gone.status_code == 503 and gone.json()["ready"] is False
    failing = {name: check["detail"] for name, check in gone.json()["checks"].items() if not check["ok"]}
    assert failing["bus"] == "not connected to NATS" and set(failing) <= {"bus", "reports"}
    assert health.status_code == 200
    assert back.status_code == 200 and back.json()["ready"] is True
