"""What-if on the manager, in front of a simulated cluster's agents (at speed 20) on a real nats-server: the
snapshot and the what-if through the API and the CLI, and in approve mode each plan's forecast (made by a real
`sova what-if` child process), shown by the API and the audit trail, then checked against what the cluster
did after the plan ran, and exposed on /metrics."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tomllib

import httpx
import numpy as np
from prometheus_client.parser import text_string_to_metric_families

from service_stack import Stack, wait_for
from sova.cli.snapshot import profile_table
from sova.model.scenario import ProfileSpec
from sova.report.what_if_answer import source_cpu_after
from sova.service.plan_forecasts import ForecastSettings, _Check, _error, _weighted_p95
from sova.sim.records import MigrationRecord

THRESHOLD = ProfileSpec("threshold", ("threshold-migration",), params={"threshold-migration": {"period": 10.0}})
HORIZON = 120.0  # s of the simulated cluster's clock: 6 s of wall time at speed 20


def with_stack(tmp_path, nats_server, body, mode: str, forecasts: ForecastSettings | None = None):
    async def run():
        stack = Stack(nats_server, tmp_path, mode=mode)
        await stack.start_cluster()
        table = {"name": THRESHOLD.name, **profile_table(THRESHOLD)}
        await stack.start_manager(profile_table=table, forecasts=forecasts)
        base = await stack.start_api()
        try:
            async with httpx.AsyncClient(base_url=base, timeout=120) as client:
                return await body(stack, client, base)
        finally:
            await stack.stop_all()

    return asyncio.run(run())


def sova(*words: str, token: str) -> subprocess.CompletedProcess:
    environment = {"SOVA_TOKEN": token, "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "sova.cli", *words], capture_output=True, text=True, env=environment)


def test_an_approve_mode_plan_carries_its_forecast_and_after_it_ran_the_forecast_is_checked(nats_server, tmp_path):
    async def body(stack, client, _base):
        store, headers = stack.manager.store, stack.headers("operator")
        await wait_for(
            lambda: any(row["answer"] for row in store.forecasts(list(stack.manager.executor.pending)).values()), 120
        )
        plan = next(p for p, row in store.forecasts(list(stack.manager.executor.pending)).items() if row["answer"])
        shown = (await client.get(f"/api/v1/plans/{plan}", headers=headers)).json()
        notes = (await client.get("/api/v1/audit", params={"plan": plan, "event": "note"}, headers=headers)).json()
        decided = await client.post(f"/api/v1/plans/{plan}/approve", headers=headers)
        await wait_for(lambda: store.forecasts([plan])[plan]["checked"] is not None, 120)
        metrics = (await client.get("/metrics", headers=headers)).text
        return plan, shown, notes, decided.json(), store.forecasts([plan])[plan], metrics

    settings = ForecastSettings(horizon=HORIZON, window=120.0, interval=10.0)
    plan, shown, notes, decided, kept, metrics = with_stack(tmp_path, nats_server, body, "approve", settings)
    answer = shown["forecast"]["answer"]
    assert shown["id"] == plan and answer["source"] == "the cluster of sova manager (approve)"
    assert [alt["name"] for alt in answer["alternatives"]] == ["nothing", "plan"]
    nothing, with_plan = (alt["forecast"] for alt in answer["alternatives"])
    # four busy VMs on a 4-core host: doing nothing keeps it hot for the whole horizon; the plan's move cools it
    assert nothing["hot_host_seconds"] > 0.9 * HORIZON and nothing["migrations"] == 0
    assert with_plan["migrations"] >= 1 and with_plan["hot_host_seconds"] < nothing["hot_host_seconds"]
    assert [note["action"] for note in notes["items"]] == ["forecast"]
    assert notes["items"][0]["reason"].startswith(f"forecast over {HORIZON:g} s: hot-host")
    assert decided["state"] == "ongoing"
    checked = kept["checked"]["quantities"]
    assert checked["migration_seconds"]["measured"] > 0  # the plan's migration ran, and its time was taken
    assert checked["hot_host_seconds"]["measured"] < HORIZON  # the move cooled the host in the real run too
    assert checked["source_cpu_after"]["measured"] < 0.9  # the host the plan relieved, after the move
    for quantity, row in checked.items():
        assert row["forecast"] is not None, quantity
    families = {family.name: family for family in text_string_to_metric_families(metrics)}
    errors = {sample.labels["quantity"]: sample.value for sample in families["sova_forecast_error_ratio"].samples}
    assert set(errors) <= set(checked) and "hot_host_seconds" in errors
    assert errors["hot_host_seconds"] == checked["hot_host_seconds"]["error"]
    assert families["sova_forecasts_checked"].samples[0].value == 1


def test_the_api_and_the_cli_answer_a_what_if_and_export_the_cluster_of_a_running_manager(nats_server, tmp_path):
    async def body(stack, client, base):
        headers = stack.headers("operator")
        knowledge = stack.manager.runtime.knowledge
        await wait_for(lambda: len(knowledge) > 1 and knowledge.latest.time - knowledge.snapshots[0].time > 100, 60)
        slo = await client.put("/api/v1/slos/v2", json={"throughput": [100, 200]}, headers=stack.headers("admin"))
        assert slo.status_code == 200, slo.text
        viewer = await client.post("/api/v1/what-if", json={"horizon": 60}, headers=stack.headers("viewer"))
        too_fine = await client.post("/api/v1/what-if", json={"horizon": 60, "interval": 0.1}, headers=headers)
        unknown = await client.post("/api/v1/what-if", json={"drain": ["h9"], "interval": 20}, headers=headers)
        bad = [
            await client.post("/api/v1/what-if", json={"horizon": "inf"}, headers=headers),
            await client.post("/api/v1/what-if", json={"as_is": 0}, headers=headers),  # a number is no yes or no
            await client.get("/api/v1/snapshot", params={"interval": 5e-324}, headers=headers),
            await client.get("/api/v1/snapshot", params={"interval": 0.1, "window": 86400}, headers=headers),
        ]
        asked = {"horizon": 120, "drain": ["h1"], "window": 100, "interval": 20}
        job = await client.post("/api/v1/what-if", json=asked, headers=headers)
        follow = f"/api/v1/what-if/{job.json()['id']}"
        await wait_for(lambda: stack.manager.what_if_jobs.jobs[job.json()["id"]].ended is not None, 120)
        answer = (await client.get(follow, headers=stack.headers("viewer"))).json()
        missing = await client.get("/api/v1/what-if/999", headers=headers)
        token = stack.secrets["operator"]
        export = [
            "snapshot", "export", "--api", base, "--out", str(tmp_path / "cluster.toml"), "--window", "100",
            "--interval", "20",
        ]  # fmt: skip
        exported = await asyncio.to_thread(sova, *export, token=token)
        cli = await asyncio.to_thread(
            sova, "what-if", "--api", base, "--horizon", "60", "--interval", "20", "--window", "100", "--json",
            token=token,
        )  # fmt: skip
        return viewer, too_fine, unknown, bad, job, answer, missing, exported, cli

    viewer, too_fine, unknown, bad, job, done, missing, exported, cli = with_stack(tmp_path, nats_server, body, "auto")
    assert viewer.status_code == 403
    # the simulated cluster's reports come seconds apart on its clock: 0.1 s samples would read nothing
    assert too_fine.status_code == 409 and "apart" in too_fine.json()["detail"]
    assert unknown.status_code == 422 and "drain: 'h9' is no host of the cluster" in unknown.json()["detail"]
    assert [response.status_code for response in bad] == [422] * 4
    assert "over 10000 samples" in bad[3].json()["detail"]
    assert job.status_code == 202 and job.json()["state"] in ("queued", "running") and job.json()["by"] == "otto"
    assert done["state"] == "done" and done["error"] is None and missing.status_code == 404
    answer = done["answer"]
    names = [alt["name"] for alt in answer["alternatives"]]
    assert names == ["nothing", "as-is", "drain-h1"]
    drained = answer["alternatives"][2]
    # by now the threshold policy spread the VMs; a drain moves h1's away, which doing nothing does not
    assert drained["forecast"]["migrations"] >= 1 and answer["alternatives"][0]["forecast"]["migrations"] == 0
    assert "drain-h1" in drained["tradeoff"]
    assert exported.returncode == 0, exported.stderr
    assert (tmp_path / "cluster.demand.parquet").stat().st_size > 0
    written = tomllib.loads((tmp_path / "cluster.toml").read_text())
    assert [(slo["vm"], slo["throughput"]) for slo in written["slos"]] == [("v2", [100, 200])]  # the tenant API's
    replay = subprocess.run(
        [sys.executable, "-m", "sova.cli", "validate", str(tmp_path / "cluster.toml")], capture_output=True, text=True
    )
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert cli.returncode == 0, cli.stderr
    assert [alt["name"] for alt in json.loads(cli.stdout)["alternatives"]] == ["nothing", "as-is"]


def test_a_forecast_error_is_a_ratio_of_the_horizon_the_utilisation_or_the_measured_time():
    assert _error("hot_host_seconds", 90.0, 60.0, 600.0) == 0.05
    assert _error("hottest_host_p95", 0.70, 0.75, 600.0) == -0.050000000000000044
    assert _error("migration_seconds", 12.0, 10.0, 600.0) == 0.2
    assert _error("migration_seconds", 12.0, 0.0, 600.0) is None  # no migration ran: no ratio
    assert _error("hot_host_seconds", None, 60.0, 600.0) is None


def test_a_relieved_hosts_cpu_after_counts_only_the_spans_that_start_after_the_last_migration_ended():
    cpu = {"cpu:h1": np.array([1.0, 1.0, 1.0, 0.6, 0.5, 0.4]), "cpu:h2": np.full(6, 0.2)}
    series = {"time": np.arange(10.0, 70.0, 10.0), **cpu}
    moved = [_migration("h1", 0.0, 12.0), _migration("h1", 0.0, 25.0, "failed")]
    assert source_cpu_after(series, moved) == 0.625  # spans 20-30 .. 50-60; the failed move's end does not count
    assert source_cpu_after(series, [_migration("h1", 0.0, 60.0)]) is None  # no span starts after it
    assert source_cpu_after(series, []) is None
    assert source_cpu_after({"time": series["time"]}, moved) is None  # no per-host columns (a large run)
    check = _Check(1, {}, start=0.0, end=60.0, seen=0.0, sources=frozenset({"h1"}))
    check.source_util = [(0.0, 10.0, 1.0), (10.0, 10.0, 0.8), (20.0, 30.0, 0.4)]
    finished = {"started": 2.0, "finished": 11.0}
    assert check.measured([("migrate", "ok", finished)])["source_cpu_after"] == 0.4
    assert check.measured([("migrate", "failed", {"error": "boom"})])["source_cpu_after"] is None


def _migration(src: str, started: float, finished: float, status: str = "completed") -> MigrationRecord:
    return MigrationRecord("vm1", src, "h2", started, finished, bytes=1e9, downtime=0.1, rounds=2, status=status)


def test_a_forecast_whose_plan_no_longer_waits_when_its_turn_comes_is_not_run():
    from sova.service.what_if_runner import WhatIfAsk, WhatIfRunner

    runner, started = WhatIfRunner(), []
    ask = WhatIfAsk(60.0, plan=({"kind": "migrate", "vm": "v1", "dst": "h2"},))
    answer = asyncio.run(runner.run({}, None, ask, started=lambda: started.append(1), wanted=lambda: False))
    assert answer is None and started == [] and runner.running == 0


def test_a_manager_taking_the_lead_checks_the_forecasts_of_plans_approved_before_it_led(tmp_path):
    from helpers import make_scenario
    from sova.drivers.sim import SimDriver
    from sova.model.knowledge import Knowledge
    from sova.service.plan_forecasts import PlanForecasts
    from sova.service.state import StateStore
    from sova.sim.engine import Simulator

    sim = Simulator(make_scenario(vms=[{"name": "a", "host": "h1"}]))
    driver, knowledge = SimDriver(sim), Knowledge()
    store = StateStore(f"sqlite:///{tmp_path / 'manager.db'}")
    move = [{"kind": "migrate", "vm": "a", "dst": "h2"}]
    figures = {"hot_host_seconds": 0.0, "hottest_host_p95": 0.2, "migration_seconds": 2.0, "source_cpu_after": 0.0}
    answer = {"alternatives": [{"name": "nothing", "forecast": {}}, {"name": "plan", "forecast": figures}]}
    for plan, decided in ((1, 10.0), (2, -50.0), (3, 12.0)):  # 2: before the Knowledge; 3: checked already
        store.record_plan(plan, decided - 1, f"n{plan}", "threshold-migration", "pending", move, [])
        store.set_plan_state(plan, "succeeded", decided_at=decided, by="otto")
        store.put_forecast(plan, 20.0, answer)
    store.put_forecast_check(3, {"from": 12.0, "to": 32.0, "quantities": {}})
    for _ in range(26):  # the standby's Knowledge: 0 to 25 s
        knowledge.add(driver.observe())
        sim.step()
    forecasts = PlanForecasts(store, snapshot=None, source="", note=lambda plan, text: None)
    assert forecasts.resume(knowledge) == 1 and list(forecasts.checks) == [1]
    for _ in range(10):  # on to 35 s: plan 1's horizon (10-30 s) has passed
        knowledge.add(driver.observe())
        sim.step()
    forecasts.poll([], knowledge)
    checked = store.forecasts([1])[1]["checked"]
    assert (checked["from"], checked["to"]) == (10.0, 30.0) and forecasts.checked == 1
    assert checked["quantities"]["hottest_host_p95"]["forecast"] == 0.2
    assert checked["quantities"]["hottest_host_p95"]["measured"] is not None


def test_the_hottest_hosts_p95_weighs_each_sample_by_the_time_it_held():
    assert _weighted_p95([0.5, 1.0], [99.0, 1.0]) == 0.5  # the peak held 1 % of the time
    assert _weighted_p95([0.5, 1.0], [90.0, 10.0]) == 1.0
    assert _weighted_p95([], []) is None


def test_what_if_jobs_refuse_a_fifth_while_four_wait_and_keep_only_the_last_ended():
    from sova.service.what_if_jobs import Busy, WhatIfJobs

    async def scenario():
        jobs = WhatIfJobs(queued_max=4, keep=2)
        gate = asyncio.Event()

        async def slow(started):
            started()
            await gate.wait()
            return {"alternatives": []}

        async def broken(started):
            raise RuntimeError("the what-if failed: boom")

        waiting = [jobs.submit(slow, "otto") for _ in range(4)]
        try:
            jobs.submit(slow, "otto")
            refused = False
        except Busy:
            refused = True
        gate.set()
        await asyncio.gather(*(job.task for job in waiting))
        failed = jobs.submit(broken, "otto")
        await asyncio.gather(failed.task)
        jobs.submit(slow, "otto")  # makes the book forget all but the last two ended
        await jobs.stop()
        return refused, [job.state for job in waiting], failed.view(), sorted(jobs.jobs)

    refused, states, failed, kept = asyncio.run(scenario())
    assert refused and states == ["done"] * 4
    assert failed["state"] == "failed" and failed["error"] == "the what-if failed: boom"
    assert kept == [4, 5, 6]  # the last two ended, and the one just asked
