"""Runs above the per-host limit: percentile bands and the extreme hosts instead of no plot; many services
as a distribution; long names cut in plots and the page."""

import re

import numpy as np
import pytest

from sova.experiments.scenario_runs import run_scenario
from sova.model.scenario_reader import scenario_from_dict
from sova.report.html import render_report
from sova.report.names import truncate
from sova.report.plots import make_plots
from sova.report.writer import summary_document
from sova.sim.recorder import PER_HOST_MAX, HostHistory

LONG = "a-web-service-with-a-rather-long-name-"
HOSTS = 100


@pytest.fixture(scope="module")
def large_run():
    raw = {
        "scenario": {"name": "large", "duration": 60, "seed": 1},
        "hosts": [{"name": "rack-host-{i}", "count": HOSTS, "cores": 8}],
        "vms": [
            {"name": "busy{i}", "count": 4, "host": "rack-host-7", "vcpus": 2},
            {"name": f"{LONG}{{i}}", "count": 30, "host": "auto"},
        ],
        "workloads": [
            {"vm": "busy*", "kind": "lookbusy", "util": 0.9},
            {"vm": f"{LONG}*", "kind": "httperf", "rate": 100},
        ],
        "profiles": {"default": {}},
    }
    scenario = scenario_from_dict(raw, "large.toml")
    return scenario, run_scenario(scenario)


def test_above_the_per_host_limit_the_recorder_keeps_percentiles_and_the_extreme_hosts(large_run):
    _, (result,) = large_run
    series = result.series
    assert HOSTS > PER_HOST_MAX
    assert not [k for k in series if k.startswith("cpu:")]
    assert {f"cpu_p{q}" for q in (5, 25, 50, 75, 95)} <= set(series)
    hottest = [k for k in series if k.startswith("cpu_hottest:")]
    assert len(hottest) == 3 and "cpu_hottest:rack-host-7" in hottest
    assert len([k for k in series if k.startswith("cpu_coolest:")]) == 3
    assert all(len(v) == len(series["time"]) for v in series.values())  # one CSV row per sample
    assert np.all(series["cpu_p5"] <= series["cpu_p50"]) and np.all(series["cpu_p50"] <= series["cpu_p95"])


def test_a_large_run_draws_percentile_bands_per_host_and_a_service_distribution(large_run, tmp_path):
    _, results = large_run
    captions = dict((path.name, caption) for caption, path in make_plots(results, tmp_path))
    assert (tmp_path / "cpu_hosts.png").stat().st_size > 0 and (tmp_path / "nic_hosts.png").exists()
    assert "percentile bands over all hosts" in captions["cpu_hosts.png"]
    assert captions["services.png"].startswith("Distribution over the 30 web services")


def test_the_page_lists_the_slowest_services_with_names_cut_and_whole_in_a_tooltip(large_run):
    scenario, results = large_run
    html = render_report(summary_document(scenario, results), results, [])
    assert "The 10 slowest of 30 web services" in html
    shown = re.findall(rf'<span title="({LONG}\d+)">([^<]+)</span>', html)
    assert len(shown) >= 10 and all(cut == truncate(name) and len(cut) < len(name) for name, cut in shown)


def test_long_names_are_cut_in_the_middle_keeping_their_distinct_end():
    assert truncate("short") == "short"
    assert truncate("host-with-a-rather-long-name-100") == "host-with…name-100"
    assert len(truncate("x" * 50)) == 18


def test_host_history_keeps_block_means_in_bounded_rows():
    history = HostHistory(["a", "b"], rows=4)
    cpu = np.arange(10.0)
    for value in cpu:
        history.add(np.array([value, 1.0]), np.array([0.0, value]))
    assert history.full_rows <= 4 and history.samples_per_row == 4
    # samples 0-3 and 4-7 are two full blocks, 8-9 a partial one
    assert history.per_sample(0, 0).tolist() == [1.5] * 4 + [5.5] * 4 + [8.5] * 2
    assert history.extremes(0, count=1) == ([0], [1])  # by CPU: a (mean 4.5) hottest, b (1.0) coolest
    assert history.extremes(1, count=1) == ([1], [0])  # by NIC the other way round


def test_the_bands_drawn_span_the_hosts_percentiles_and_the_extreme_hosts_are_lines(large_run, tmp_path, monkeypatch):
    from matplotlib.collections import PolyCollection

    import sova.report.host_plots as host_plots

    drawn = []
    real = host_plots.save
    monkeypatch.setattr(host_plots, "save", lambda fig, path: drawn.append(fig) or real(fig, path))
    _, results = large_run
    host_plots.host_plot(results, "cpu", "CPU", tmp_path / "cpu_hosts.png")
    (ax,) = [a for a in drawn[0].axes if a.collections]
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2  # p5-p95 and p25-p75
    outer, inner = (band.get_paths()[0].vertices[:, 1] for band in bands)
    series = results[0].series
    assert outer.max() == pytest.approx(series["cpu_p95"].max(), rel=0.2)
    assert inner.max() <= outer.max() and inner.min() >= outer.min()
    assert len(ax.lines) >= 1 + 6  # the median and the 3 hottest and 3 coolest hosts
