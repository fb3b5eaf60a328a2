"""The profiles table's difference column, which differences matter, and the trade-off sentence."""

import re

import pytest

from sova.report.html import render_report
from sova.report.metrics import metric_at, present_metrics
from sova.report.tradeoff import compare, matters, tradeoff_sentence

DEFAULT = {
    "cpu": {"host_util_max_p95": 1.0, "hot_host_fraction": 0.667},
    "services": {"served": 1000.0, "response_mean": 0.00025, "response_p99": 0.0004},
    "network": {"nic_tx_util_max_mean": 0.25},
    "migrations": {"completed": 0, "time_total": 0.0},
    "energy_kwh": 1.0,
}
THRESHOLD = {
    "cpu": {"host_util_max_p95": 0.88, "hot_host_fraction": 0.021},
    "services": {"served": 1000.0, "response_mean": 0.0003, "response_p99": 0.0005},
    "network": {"nic_tx_util_max_mean": 0.3},
    "migrations": {"completed": 3, "time_total": 8.0},
    "energy_kwh": 1.015,
}


def doc(profiles: dict) -> dict:
    scenario = {"name": "t", "description": "", "source": "t.toml", "duration": 600, "step": 1.0, "seed": 1}
    return {"sova_version": "test", "scenario": {**scenario, "hosts": 2, "vms": 3}, "profiles": profiles}


def row_cells(page: str, label: str) -> list[tuple[str, str]]:
    """(class, text) of each cell after the label in the profiles table's row `label`."""
    row = re.search(rf'<tr><td class="l">{re.escape(label)}</td>(.*?)</tr>', page).group(1)
    return [
        (cls.strip(), re.sub("<[^>]+>", "", text))
        for cls, text in re.findall(r'<td class="([^"]*)"[^>]*>(.*?)</td>', row)
    ]


def test_the_difference_is_absolute_and_relative_in_the_metrics_unit():
    assert compare(metric_at("services.response_mean"), DEFAULT, THRESHOLD).text() == "+0.05 ms (+20%)"
    assert compare(metric_at("cpu.hot_host_fraction"), DEFAULT, THRESHOLD).text() == "-64.6 pp (-97%)"
    assert compare(metric_at("migrations.time_total"), DEFAULT, THRESHOLD).text() == "+8.0 s"  # no relative from 0
    assert compare(metric_at("services.served"), DEFAULT, THRESHOLD).text() == "same"


@pytest.mark.parametrize(
    ("path", "base", "other", "expected"),
    [
        ("migrations.time_total", 0.0, 0.0, False),  # 0.0 s against 0.0 s
        ("energy_kwh", 1.0, 1.015, False),  # 1.5 %: below 2 %
        ("energy_kwh", 1.0, 1.03, True),
        ("services.response_mean", 1e-6, 1.2e-6, False),  # +20 %, but both show as 0.00 ms
        ("services.response_mean", None, 0.001, False),
        ("services.response_mean", float("nan"), 0.001, False),
    ],
)
def test_a_difference_matters_only_above_two_percent_and_the_shown_precision(path, base, other, expected):
    assert matters(metric_at(path), base, other) is expected


def test_green_and_red_mark_only_differences_that_matter():
    page = render_report(doc({"default": DEFAULT, "threshold": THRESHOLD}), [], [])
    # response time: default is better (its value green), threshold's difference red
    assert row_cells(page, "mean response time") == [
        ("best", "0.25 ms"),
        ("", "0.30 ms"),
        ("d worse", "+0.05 ms (+20%)"),
    ]
    assert row_cells(page, "time with a host above 90 %") == [
        ("", "66.7%"),
        ("best", "2.1%"),
        ("d better", "-64.6 pp (-97%)"),
    ]
    # 1.5 % more energy does not matter: nothing marked
    assert row_cells(page, "energy") == [("", "1.000 kWh"), ("", "1.015 kWh"), ("d", "+0.015 kWh (+1.5%)")]
    # neither way is better for completed migrations: a difference, never a colour
    assert row_cells(page, "completed")[2] == ("d", "+3")


def test_the_trade_off_sentence_names_what_is_better_and_what_worse():
    metrics = present_metrics([DEFAULT, THRESHOLD])
    assert tradeoff_sentence("default", DEFAULT, "threshold", THRESHOLD, metrics) == (
        "Against default, threshold is better only on the hottest host's CPU (time with a host above 90 %: "
        "66.7% → 2.1%); worse on response time (p99 response time: 0.40 ms → 0.50 ms), NIC use (25.0% → 30.0%) "
        "and migration cost (0.0 s → 8.0 s)."
    )


def test_the_trade_off_sentence_says_so_when_nothing_matters():
    metrics = present_metrics([DEFAULT])
    sentence = tradeoff_sentence("default", DEFAULT, "copy", dict(DEFAULT, energy_kwh=1.01), metrics)
    assert sentence.startswith("copy and default differ by less than 2%")


def test_the_report_states_the_rule_and_the_trade_off():
    page = render_report(doc({"default": DEFAULT, "threshold": THRESHOLD}), [], [])
    assert "at least 2% of the larger value and visible at the precision shown" in page
    assert "Against default, threshold is better only on" in page
