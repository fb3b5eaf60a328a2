"""The manager's GET /metrics held to Prometheus' conventions on the running service: promtool's lint finds
nothing to say, no counter falls between two scrapes, each VM's IO counters and each host's last report
are there, and docs/service.md lists exactly the families a scrape shows. The service: a simulated
hotspot that threshold migration relieves in auto mode, on a real nats-server, scraped over HTTP."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from monitoring_files import documented_metrics, promtool
from service_stack import Stack, wait_for
from sova.service.natsd import NatsServer
from sova.service.plan_book import TERMINAL


@pytest.fixture(scope="module")
def scrapes(tmp_path_factory) -> tuple[str, str]:
    """Two scrapes of the running service: once a plan succeeded, and again ten reports later."""
    tmp_path = tmp_path_factory.mktemp("metrics")
    server = NatsServer(tmp_path / "nats").start()

    async def run():
        stack = Stack(server, tmp_path, mode="auto")
        await stack.start_cluster()
        await stack.start_manager()
        base = await stack.start_api()
        try:
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                await wait_for(lambda: stack.store.plan_counts().get("succeeded", 0) >= 1, timeout=90)
                first = await client.get("/metrics", headers=stack.headers("viewer"))
                received = stack.manager.collector.received_count
                await wait_for(lambda: stack.manager.collector.received_count >= received + 10)
                second = await client.get("/metrics", headers=stack.headers("viewer"))
        finally:
            await stack.stop_all()
        return first.text, second.text

    try:
        return asyncio.run(run())
    finally:
        server.stop()


def samples(text: str) -> dict[tuple[str, tuple], tuple[str, float]]:
    """Each sample of a scrape by name and labels: its family's type and its value."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): (family.type, sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def with_a_sample_in_every_family(text: str) -> str:
    """The scrape with a sample of 0 in each family that shows none (no VM is under an SLO here, no VF is
    held): promtool's lint looks only at families with samples, so this way it looks at every one."""
    lines, out = text.splitlines(), []
    for index, line in enumerate(lines):
        out.append(line)
        if line.startswith("# TYPE ") and (index + 1 == len(lines) or lines[index + 1].startswith("#")):
            out.append(f"{line.split()[2]} 0")
    return "\n".join(out) + "\n"


def test_promtool_finds_nothing_to_say_on_a_scrape_of_the_running_service(scrapes):
    for text in (*scrapes, with_a_sample_in_every_family(scrapes[1])):
        checked = promtool("check", "metrics", stdin=text)
        assert checked.returncode == 0 and not (checked.stdout + checked.stderr).strip(), checked
    # the same check speaks up on a counter without `_total`
    flawed = with_a_sample_in_every_family(scrapes[1] + "# HELP sova_x_ops X\n# TYPE sova_x_ops counter\n")
    answer = promtool("check", "metrics", stdin=flawed)
    said = (answer.stdout + answer.stderr).strip()
    assert answer.returncode != 0 and said == 'sova_x_ops counter metrics should have "_total" suffix'


def test_no_counter_falls_between_two_scrapes(scrapes):
    before, after = (samples(text) for text in scrapes)
    counting = [key for key, (kind, _) in before.items() if kind in ("counter", "histogram") and key in after]
    assert {name for name, _ in counting} >= {"sova_reports_received_total", "sova_vm_io_ops_total"}
    fallen = [key for key in counting if after[key][1] < before[key][1]]
    assert not fallen, fallen
    assert after[("sova_reports_received_total", ())][1] >= before[("sova_reports_received_total", ())][1] + 10


def test_each_vm_has_its_io_counters_and_each_host_its_last_reports_time(scrapes):
    latest = samples(scrapes[1])

    def labelled(metric: str) -> list[tuple[dict, float]]:
        return [(dict(labels), value) for (name, labels), (_, value) in latest.items() if name == metric]

    io = [labels for labels, _ in labelled("sova_vm_io_ops_total")]
    assert sorted((labels["vm"], labels["op"]) for labels in io) == [
        (vm, op) for vm in ("v1", "v2", "v3", "v4") for op in ("read", "write")
    ]  # each VM once, under the one host that reports it
    assert {labels["host"] for labels in io} <= {"h1", "h2"}
    reported = {labels["host"]: at for labels, at in labelled("sova_host_last_report_timestamp_seconds")}
    assert set(reported) == {"h1", "h2"} and all(time.time() - 60 < at <= time.time() for at in reported.values())
    ended = {labels["state"]: count for labels, count in labelled("sova_plans_ended_total")}
    assert set(ended) == set(TERMINAL) and ended["succeeded"] >= 1  # every end state, 0 until one comes


def test_docs_list_exactly_the_metric_families_a_scrape_shows(scrapes):
    scraped = {line.split()[2] for line in scrapes[1].splitlines() if line.startswith("# TYPE ")}
    assert documented_metrics() == scraped
