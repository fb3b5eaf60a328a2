"""A real Prometheus (Debian's 2.42) scraping the running service every second with a viewer's token:
the shipped alerting rules load and evaluate without error on what it scraped, and every query of the
shipped Grafana dashboard answers, the rates of the counters among them with data."""

from __future__ import annotations

import asyncio

from bus_helpers import until
from monitoring_files import RULES, dashboard_queries
from prometheus_server import PrometheusServer
from service_stack import Stack


def run_with_prometheus(nats_server, tmp_path, body):
    async def run():
        stack = Stack(nats_server, tmp_path, mode="auto")
        await stack.start_cluster()
        await stack.start_manager()
        base = await stack.start_api()
        target = base.removeprefix("http://")
        prometheus = PrometheusServer(tmp_path / "prometheus", target, stack.secrets["viewer"], [RULES]).start()
        try:
            await until(prometheus.ready)
            return await body(stack, prometheus)
        finally:
            prometheus.stop()
            await stack.stop_all()

    return asyncio.run(run())


def test_prometheus_runs_the_alerting_rules_and_answers_every_dashboard_query(nats_server, tmp_path):
    async def body(stack, prometheus):
        async def scraped_a_rate():  # two scrapes at least, within the rates' window
            answer = await prometheus.get("query", query="rate(sova_reports_received_total[5s]) > 0")
            return bool(answer["result"])

        async def rules_evaluated():
            groups = (await prometheus.get("rules"))["groups"]
            return all(not rule["lastEvaluation"].startswith("0001") for group in groups for rule in group["rules"])

        await until(scraped_a_rate, timeout=60)
        await until(rules_evaluated, timeout=30)
        targets = (await prometheus.get("targets"))["activeTargets"]
        rules = [rule for group in (await prometheus.get("rules"))["groups"] for rule in group["rules"]]
        answers: dict[str, list] = {}  # per panel, each target's result
        for title, expr in dashboard_queries():
            promql = expr.replace("$__rate_interval", "5s").replace("$host", ".*")
            answers.setdefault(title, []).append((await prometheus.get("query", query=promql))["result"])
        return targets, rules, answers

    targets, rules, answers = run_with_prometheus(nats_server, tmp_path, body)
    assert [(target["health"], target["lastError"]) for target in targets] == [("up", "")]
    assert len(rules) == 5 and all(rule["health"] == "ok" and not rule.get("lastError") for rule in rules), rules
    assert {row["metric"]["host"] for row in answers["Host CPU utilisation"][0]} == {"h1", "h2"}
    assert {row["metric"]["vm"] for row in answers["VM IOPS"][0]} == {"v1", "v2", "v3", "v4"}
    assert float(answers["Managers leading"][0][0]["value"][1]) == 1
    taken, refused = answers["Host reports per second"]
    assert float(taken[0]["value"][1]) > 0 and float(refused[0]["value"][1]) == 0
