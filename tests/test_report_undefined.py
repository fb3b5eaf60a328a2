"""Metrics without a finite value read "n/a" with their reason in the report, never "nan ms"."""

import re

import numpy as np

from sova.control.audit import AuditLog
from sova.experiments.scenario_runs import ProfileResult
from sova.report.html import render_report
from sova.report.metrics import NO_VALUE, NOT_FINITE

NOTHING_SERVED = "no request was served in the run"

SERVED = {"services": {"served": 100.0, "response_mean": 0.001, "response_p99": 0.002}, "energy_kwh": 1.0}
UNSERVED = {
    "services": {"served": 0.0, "response_mean": None, "response_p99": None},
    "energy_kwh": float("nan"),
    "undefined": {"services.response_mean": NOTHING_SERVED, "services.response_p99": NOTHING_SERVED},
}


def page(profiles: dict, results=()) -> str:
    scenario = {"name": "t", "description": "", "source": "t.toml", "duration": 60, "step": 1.0, "seed": 1}
    doc = {"sova_version": "test", "scenario": {**scenario, "hosts": 1, "vms": 1}, "profiles": profiles}
    return render_report(doc, list(results), [])


def test_a_null_metric_shows_na_with_its_reason_in_a_tooltip_and_a_footnote():
    html = page({"ok": SERVED, "idle": UNSERVED})
    assert f'title="{NOTHING_SERVED}">n/a<sup>1</sup>' in html
    assert f"<li>n/a: {NOTHING_SERVED} (idle: mean response time; idle: p99 response time)</li>" in html


def test_a_nan_metric_shows_na_and_never_nan():
    html = page({"ok": SERVED, "idle": UNSERVED})
    assert f'title="{NOT_FINITE}">n/a' in html
    assert not re.search(r"\bnan\b", html, re.IGNORECASE)
    # no difference against a value that is not there
    energy = re.search(r'<td class="l">energy</td>(.*?)</tr>', html).group(1)
    assert energy.endswith('<td class="d ">–</td>')


def test_a_null_metric_without_a_reason_still_reads_na():
    html = page({"a": SERVED, "b": {"services": {"served": 5.0, "response_mean": None}, "energy_kwh": 1.0}})
    assert f'title="{NO_VALUE}">n/a' in html


def test_services_without_response_times_read_na_in_the_per_service_table():
    service = {"server": "web1", "response_mean": None, "response_p95": float("nan")}
    result = ProfileResult("idle", UNSERVED, {"time": np.arange(60.0)}, [], AuditLog(), services=[service])
    html = page({"idle": UNSERVED}, [result])
    assert '<td class="l">web1</td><td class="">n/a</td><td class="">n/a</td>' in html
    assert not re.search(r"\bnan\b", html, re.IGNORECASE)
