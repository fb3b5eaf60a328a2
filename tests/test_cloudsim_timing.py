"""When CloudSim 3.0.3 reads its traces and counts its results, as settings, on cases worked out by hand:
a planetlab trace read on a line between samples (``interpolate``) and ahead of the clock (``lead``), so that
a decision sees the demand CloudSim's would; and the summary's energy and SLA counted over a window
(``[outputs] measure_from`` and ``measure_to``), as CloudSim counts from its first update to its last."""

from __future__ import annotations

import pytest

from helpers import make_scenario
from sova.experiments.measure_window import MeasureWindow
from sova.experiments.scenario_runs import run_profile
from sova.sim.engine import Simulator

SAMPLES = [10, 20, 40]  # CPU % every 300 s


def _cpu_per_step(tmp_path, steps: int = 3, outputs: dict | None = None, **workload) -> list[float]:
    """Core-seconds of CPU a one-core VM used in each 300-s step, replaying SAMPLES."""
    trace = tmp_path / "vm1"
    trace.write_text("\n".join(str(sample) for sample in SAMPLES) + "\n")
    scenario = make_scenario(
        scenario={"duration": 300 * steps, "step": 300},
        hosts=[{"name": "h1", "cores": 1, "mips": 1000}],
        vms=[{"name": "vm1", "host": "h1", "vcpus": 1, "mips": 1000}],
        workloads=[{"vm": "vm1", "kind": "planetlab", "file": str(trace), **workload}],
        simulator={"idle_guest_cpu": 0.0},
        outputs=outputs or {},
    )
    sim = Simulator(scenario)
    used = []
    for _ in range(steps):
        before = float(sim.sensors.counters["cpu_time"][0])
        sim.step()
        used.append(float(sim.sensors.counters["cpu_time"][0]) - before)
    return used


def test_each_sample_holds_for_its_step_by_default_and_the_trace_wraps(tmp_path):
    assert _cpu_per_step(tmp_path, steps=4) == pytest.approx([30, 60, 120, 30])


def test_a_lead_plays_the_trace_that_far_ahead_of_the_clock(tmp_path):
    # the step from 0 plays the sample at 300 s, and so on; past the end the trace wraps
    assert _cpu_per_step(tmp_path, lead=300) == pytest.approx([60, 120, 30])


def test_interpolated_samples_lie_on_a_line_and_the_last_one_holds(tmp_path):
    # CloudSim's updates at 300.1, 600.1, 900.1 s: 20 + 20 x 0.1/300 %, 40 %, 40 % (held past the end)
    used = _cpu_per_step(tmp_path, lead=300.1, interpolate=True)
    assert used == pytest.approx([300 * (0.20 + 0.20 * 0.1 / 300), 300 * 0.40, 300 * 0.40])


def test_a_measure_window_counts_the_energy_and_the_sla_between_its_ends(tmp_path):
    scenario = make_scenario(
        scenario={"duration": 900, "step": 300},
        hosts=[{"name": "h1", "cores": 1, "power_model": "custom", "power_curve": [100 + 10 * t for t in range(11)]}],
        vms=[{"name": "vm1", "host": "h1", "vcpus": 1}],
        workloads=[{"vm": "vm1", "kind": "lookbusy", "util": 0.5}],
        simulator={"idle_guest_cpu": 0.0},
        outputs={"plots": False, "measure_from": 300, "measure_to": 600},
        profiles={"none": {"policies": []}},
    )
    summary = run_profile(scenario, "none").summary
    assert summary["energy_kwh"] == pytest.approx(150 * 300 / 3.6e6)  # P(0.5) = 150 W, one step of three
    sim = Simulator(scenario)
    window = MeasureWindow(300, 600)
    window.observe(sim)
    for _ in range(3):
        sim.step()
        window.observe(sim)
    totals = window.totals(sim)
    assert totals["host_active_s"] == pytest.approx([300]) and totals["vm_cpu_asked"] == pytest.approx([150])
