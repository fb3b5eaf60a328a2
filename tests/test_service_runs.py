"""Simulation runs through the manager: each a real `sova run` process in a directory of its own, followed
by its progress file, its report fetched through the API; bad scenarios refused before anything runs."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from helpers import SMALL
from service_stack import Stack
from sova.service.runs import RunBook, RunError

SHORT = SMALL.replace("duration = 120", "duration = 30")


def wait_done(book: RunBook, run_id: str, timeout: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        book.poll()
        record = book.get(run_id)
        if record["state"] in ("done", "failed") or time.monotonic() > deadline:
            return record
        time.sleep(0.1)


def test_a_submitted_scenario_runs_in_its_own_process_and_its_results_can_be_fetched(tmp_path):
    book = RunBook(tmp_path / "runs")
    try:
        first = book.submit(SHORT, ["threshold"], by="alice")
        second = book.submit(SHORT, [], by="bob")
        book.poll()  # starts the first; the second waits (one run at a time)
        states = book.get(first["id"])["state"], book.get(second["id"])["state"]
        done = wait_done(book, first["id"])
        later = wait_done(book, second["id"])
    finally:
        book.stop()  # a run still going when a check failed
    assert first["state"] == second["state"] == "queued" and states == ("running", "queued")
    assert done["state"] == "done", done["error"]
    assert done["progress"] == {"done": 30, "total": 30, "unit": "simulated seconds"} and done["report"]
    assert book.result(first["id"], "report.html").read_text().lower().startswith("<!doctype html>")
    assert book.result(first["id"], "../run.json") is None and book.result("../x", "report.html") is None
    assert later["state"] == "done" and later["progress"]["total"] == 60  # both profiles
    assert [r["id"] for r in book.list()] == [second["id"], first["id"]]


def test_a_bad_scenario_or_profile_is_refused_with_its_location_and_nothing_is_queued(tmp_path):
    book = RunBook(tmp_path / "runs")
    with pytest.raises(RunError, match=r"scenario.*\[\[hosts\]\] #1.*cores"):
        book.submit(SHORT.replace("cores = 4", "cores = -4"), [], by="alice")
    with pytest.raises(RunError, match="profiles: nonsense: no such profile"):
        book.submit(SHORT, ["nonsense"], by="alice")
    with pytest.raises(RunError, match="scenario"):
        book.submit("this is [not toml", [], by="alice")
    assert book.list() == [] and list((tmp_path / "runs").iterdir()) == []


def test_runs_through_the_api_an_operator_submits_a_viewer_follows_and_fetches_the_report(nats_server, tmp_path):
    async def run():
        stack = Stack(nats_server, tmp_path, mode="dry-run")
        await stack.start_cluster()
        await stack.start_manager()
        base = await stack.start_api()
        try:
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                operator, viewer = stack.headers("operator"), stack.headers("viewer")
                refused = await client.post("/api/v1/runs", json={"scenario": SHORT}, headers=viewer)
                bad = await client.post("/api/v1/runs", json={"scenario": "x = [", "profiles": []}, headers=operator)
                made = await client.post("/api/v1/runs", json={"scenario": SHORT}, headers=operator)
                run_id = made.json()["id"]
                deadline = time.monotonic() + 120
                while (record := (await client.get(f"/api/v1/runs/{run_id}", headers=viewer)).json())["state"] in (
                    "queued",
                    "running",
                ):
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.2)
                report = await client.get(f"/api/v1/runs/{run_id}/results/report.html", headers=viewer)
                missing = await client.get(f"/api/v1/runs/{run_id}/results/nothing.csv", headers=viewer)
                return refused, bad, made, record, report, missing
        finally:
            await stack.stop_all()

    refused, bad, made, record, report, missing = asyncio.run(run())
    assert refused.status_code == 403 and bad.status_code == 422 and "scenario" in bad.json()["detail"]
    assert made.status_code == 201 and made.json()["by"] == "otto"
    assert record["state"] == "done" and record["report"]
    assert report.status_code == 200 and "text/html" in report.headers["content-type"]
    assert missing.status_code == 404


def test_a_scenario_may_read_traces_only_from_its_folder_or_the_traces_directory(tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("password\n")
    book = RunBook(tmp_path / "runs", traces=traces)
    workload = '\n[[workloads]]\nvm = "v2"\nkind = "planetlab"\nfile = "{}"\n'
    for path in (str(secret), "../../secret.txt", "/etc/passwd"):
        with pytest.raises(RunError, match="is not a trace under"):
            book.submit(SHORT + workload.format(path), [], by="alice")
    with pytest.raises(RunError, match="no --run-traces directory"):
        RunBook(tmp_path / "other").submit(SHORT + workload.format(str(traces / "x")), [], by="alice")
    assert book.list() == []
