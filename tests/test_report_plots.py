"""The plot conventions: labelled axes, one legend below the panels, black migration markers, smoothing,
log axes only where needed and then labelled."""

import csv

import numpy as np
import pytest
from matplotlib.colors import to_rgba

import sova.report.host_plots as host_plots
import sova.report.plots as plots
from sova.experiments.scenario_runs import run_scenario
from sova.model.scenario_reader import scenario_from_dict
from sova.report.plot_style import MIGRATION_LABEL, looks_like_band, needs_log_scale, smooth, smoothing_window
from sova.report.writer import write_results

HOTSPOT = {
    "scenario": {"name": "hotspot", "duration": 300, "seed": 1},
    "hosts": [{"name": "h{i}", "count": 2, "cores": 4}],
    "vms": [{"name": "v{i}", "count": 4, "host": "h1"}],
    "workloads": [{"vm": "v*", "kind": "lookbusy"}, {"vm": "v1", "kind": "httperf", "rate": 200}],
    "profiles": {"default": {}, "threshold": {"policies": ["threshold-migration"]}},
}


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    """Every figure make_plots draws for a two-profile run with migrations, inspected before it is closed."""
    drawn = []
    save = plots.save

    def keep(fig, path):
        drawn.append((path.name, fig))
        return save(fig, path)

    results = run_scenario(scenario_from_dict(HOTSPOT, "hotspot.toml"))
    assert any(r.migrations for r in results)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plots, "save", keep)
        mp.setattr(host_plots, "save", keep)
        plots.make_plots(results, tmp_path_factory.mktemp("plots"))
    return dict(drawn)


def test_every_panel_has_a_y_label_and_every_figure_one_legend_below(figures):
    for name, fig in figures.items():
        assert all(ax.get_ylabel() for ax in fig.axes), name
        assert len(fig.legends) == 1 and not any(ax.get_legend() for ax in fig.axes), name


def test_every_plot_names_the_profiles_it_shows(figures):
    for name, fig in figures.items():
        titles = " ".join(ax.get_title() for ax in fig.axes)
        assert "default" in titles and "threshold" in titles, name


def test_migration_starts_are_black_dashed_in_every_per_host_panel(figures):
    fig = figures["cpu_hosts.png"]
    threshold = fig.axes[1]
    markers = [line for line in threshold.lines if line.get_linestyle() == "--"]
    assert markers and all(to_rgba(line.get_color())[:3] == (0, 0, 0) for line in markers)
    host_colors = {to_rgba(line.get_color())[:3] for line in threshold.lines if line.get_linestyle() == "-"}
    assert (0, 0, 0) not in host_colors
    assert MIGRATION_LABEL in [t.get_text() for t in fig.legends[0].get_texts()]


def test_axes_are_linear_unless_the_values_span_two_decades():
    assert not needs_log_scale([0.25, 0.3, 1.05])  # the quickstart's response times (ms)
    assert needs_log_scale([0.1, 5.0, 1100.0])  # a saturated web server
    assert not needs_log_scale([0.0, np.nan, 1.0])


def test_log_axes_say_so(figures):
    for name, fig in figures.items():
        for ax in fig.axes:
            if ax.get_yscale() == "log":
                assert "log scale" in ax.get_ylabel(), name


def test_smoothing_removes_a_duty_cycle_and_the_raw_samples_draw_as_a_band():
    t = np.arange(1800)
    duty = np.where(t % 10 < 4, 0.88, 0.3)  # a 10 s duty cycle, sampled every second
    smoothed = smooth(duty, smoothing_window(len(duty)))
    steady = smoothed[100:-100]
    assert np.ptp(steady) < 0.02 * np.ptp(duty)
    assert np.mean(steady) == pytest.approx(np.mean(duty), abs=0.01)
    assert looks_like_band(duty, smoothed)
    ramp = np.linspace(0, 1, 1800)
    assert not looks_like_band(ramp, smooth(ramp, smoothing_window(len(ramp))))


def test_smoothing_skips_steps_without_a_value():
    values = np.array([1.0, np.nan, 1.0, 1.0, np.nan, 1.0])
    assert np.allclose(smooth(values, 3), 1.0)


def test_a_run_with_storage_slos_plots_each_vms_scores_and_each_scheduled_target(tmp_path):
    scenario = scenario_from_dict(
        {
            "scenario": {"name": "slo", "duration": 60, "seed": 1},
            "simulator": {"storage_step": 0.025},
            "hosts": [{"name": "h1"}],
            "storage": [{"name": "ssd"}],
            "vms": [{"name": "db", "host": "h1"}, {"name": "web", "host": "h1"}],
            "workloads": [{"vm": vm, "kind": "filebench", "personality": "varmail"} for vm in ("db", "web")],
            "slos": [
                {"vm": "db", "throughput": [300, 500], "ramp_step": 100, "ramp_every": "20s"},
                {"vm": "web", "throughput": [200, 200]},
            ],
            "profiles": {"see": {"policies": ["see"]}, "static": {"policies": ["static-throttle"]}},
        }
    )
    results = run_scenario(scenario)
    written = plots.make_plots(results, tmp_path)
    names = {path.name for _, path in written}
    assert {"slo_scores.png", "slo_levels-see.png", "slo_levels-static.png", "slo_intervals-see.png"} <= names
    assert all(path.exists() and path.stat().st_size > 0 for _, path in written)
    write_results(scenario, results, tmp_path)
    with (tmp_path / "slo-see.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(round(float(row["time"])), row["vm"], float(row["target"])) for row in rows] == [
        (30, "db", 400),
        (30, "web", 200),
    ]
    assert rows[0]["io_size_limit"] == ""  # no IO size limit: an empty cell
