"""The alerting rules shipped in deploy/prometheus: promtool checks them and runs their unit tests (series
in, alerts out, one case of each alert firing and one of it not yet firing), their thresholds are the
code's defaults they are documented as, and they read only metrics the manager exposes."""

from __future__ import annotations

import inspect
import re

import yaml

from monitoring_files import RULE_TESTS, RULES, documented_metrics, metrics_section, promtool, read_metrics
from sova.analyze.hotspot import CpuHotspots
from sova.model.scenario import ControlSpec
from sova.plan.autonomic_manager import HOTSPOT_PARAMS
from sova.plan.threshold_migration import ThresholdMigration
from sova.service.reporting import ReportCollector


def alerts() -> dict[str, dict]:
    """The rules file's alerts by name."""
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule["alert"]: rule for group in groups for rule in group["rules"] if "alert" in rule}


def seconds(duration: str) -> float:
    """A Prometheus duration of minutes and seconds ("2m", "30s", "1m30s") in seconds."""
    parts = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", duration)
    assert parts and duration, f"not a duration of minutes and seconds: {duration!r}"
    return 60 * int(parts[1] or 0) + int(parts[2] or 0)


def test_promtool_checks_the_alerting_rules():
    checked = promtool("check", "rules", str(RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in checked.stdout


def test_each_alert_fires_on_its_unit_tests_series_and_not_before():
    ran = promtool("test", "rules", str(RULE_TESTS))
    assert ran.returncode == 0 and "SUCCESS" in ran.stdout, ran.stdout + ran.stderr
    cases = [case for test in yaml.safe_load(RULE_TESTS.read_text())["tests"] for case in test["alert_rule_test"]]
    for name in alerts():
        outcomes = {bool(case["exp_alerts"]) for case in cases if case["alertname"] == name}
        assert outcomes == {True, False}, f"{name}: needs a case where it fires and one where it does not yet"


def test_the_thresholds_are_the_defaults_of_the_code_they_follow():
    rules = alerts()
    hot = ThresholdMigration.schema["hot"].default
    assert rules["SovaHostHot"]["expr"].endswith(f"> {hot}")
    # past the hotspot rules' window (n observations of `window` s) and one period of the policy
    window = ThresholdMigration.schema["n"].default * ThresholdMigration.schema["window"].default
    assert window == HOTSPOT_PARAMS["n"].default * HOTSPOT_PARAMS["interval"].default == 50
    assert CpuHotspots.name in ThresholdMigration.analyzers
    assert seconds(rules["SovaHostHot"]["for"]) > window + ThresholdMigration.schema["period"].default
    stale_after = inspect.signature(ReportCollector).parameters["stale_after"].default
    assert stale_after == ControlSpec().failure_grace == 30
    assert rules["SovaAgentStale"]["expr"].endswith(f"> {stale_after:g}")


def test_the_rules_read_only_exposed_metrics_and_the_docs_give_each_alert_its_threshold():
    documented = documented_metrics()
    section = metrics_section()
    for name, rule in alerts().items():
        assert read_metrics(rule["expr"]) <= documented, name
        assert read_metrics(rule["expr"]), name
        assert re.search(rf"^\| `{name}` \|", section, re.MULTILINE), f"docs/service.md does not list {name}"
