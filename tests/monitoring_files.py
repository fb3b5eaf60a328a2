"""What the tests of the metrics, the alerting rules and the Grafana dashboard share: promtool (Debian's
`prometheus` package), the shipped files, the metric families docs/service.md lists, and the families a
PromQL expression reads."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "deploy" / "prometheus" / "sova-alerts.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "sova-alerts.test.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "sova-dashboard.json"
SERVICE_DOC = ROOT / "docs" / "service.md"


def promtool(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """promtool's answer (its output in stdout and stderr); a test fails, naming the package, without it."""
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("needs promtool, from the Debian package `prometheus` (as root, `make` installs it)")
    return subprocess.run([found, *args], input=stdin, capture_output=True, text=True, timeout=120)


def metrics_section() -> str:
    """docs/service.md's "## Metrics" section."""
    return SERVICE_DOC.read_text().split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]


def documented_metrics() -> set[str]:
    """The metric families the Metrics table of docs/service.md lists (its first column)."""
    rows = [line.split("|")[1] for line in metrics_section().splitlines() if line.startswith("| `sova_")]
    return {name for row in rows for name in re.findall(r"`(sova_[a-z0-9_]+)`", row)}


def read_metrics(expr: str) -> set[str]:
    """The families a PromQL expression reads: its sova_ names, a histogram's series by the histogram's."""
    return {re.sub(r"_(bucket|sum|count)$", "", name) for name in re.findall(r"\bsova_[a-z0-9_]+", expr)}


def dashboard() -> dict:
    """The shipped Grafana dashboard."""
    return json.loads(DASHBOARD.read_text())


def dashboard_queries() -> list[tuple[str, str]]:
    """Each of the dashboard's targets as (its panel's title, its PromQL expression)."""
    return [(panel["title"], target["expr"]) for panel in dashboard()["panels"] for target in panel["targets"]]
