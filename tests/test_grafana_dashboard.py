"""The Grafana dashboard shipped in deploy/grafana: valid JSON with what Grafana's dashboard schema needs
(panels on a grid, each with its targets, all on the Prometheus chosen in a datasource variable), and
every query valid PromQL that reads only metrics the manager exposes."""

from __future__ import annotations

import yaml

from monitoring_files import dashboard, dashboard_queries, documented_metrics, metrics_section, promtool, read_metrics

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def test_the_dashboard_has_panels_on_a_grid_with_targets_on_a_datasource_variable():
    board = dashboard()
    assert board["uid"] and board["title"] and isinstance(board["schemaVersion"], int)
    variables = {variable["name"]: variable for variable in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert variables["host"]["datasource"] == DATASOURCE
    panels = board["panels"]
    assert len({panel["id"] for panel in panels}) == len(panels) >= 10
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["w"] > 0 and grid["h"] > 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        assert panel["type"] in ("timeseries", "stat") and panel["title"]
        assert panel["datasource"] == DATASOURCE, panel["title"]
        references = [target["refId"] for target in panel["targets"]]
        assert references and len(set(references)) == len(references), panel["title"]
        assert all(target["datasource"] == DATASOURCE and target["expr"] for target in panel["targets"])


def test_every_query_is_promql_that_reads_only_metrics_the_manager_exposes(tmp_path):
    documented = documented_metrics()
    for title, expr in dashboard_queries():
        assert read_metrics(expr) and read_metrics(expr) <= documented, (title, expr)
    # promtool parses each query as a recording rule's, Grafana's variables given values
    rules = [
        {"record": f"dashboard:query_{index}", "expr": expr.replace("$__rate_interval", "1m").replace("$host", ".*")}
        for index, (_, expr) in enumerate(dashboard_queries())
    ]
    path = tmp_path / "queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    checked = promtool("check", "rules", str(path))
    assert checked.returncode == 0 and f"SUCCESS: {len(rules)} rules found" in checked.stdout, checked


def test_the_dashboard_shows_every_family_the_docs_list():
    shown = set().union(*(read_metrics(expr) for _, expr in dashboard_queries()))
    assert shown == documented_metrics()
    assert "deploy/grafana/sova-dashboard.json" in metrics_section()
