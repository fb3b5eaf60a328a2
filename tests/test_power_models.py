"""Host power models: the SPECpower tables CloudSim's PlanetLab study uses, interpolated between their
deciles, a linear model from idle to full power, a host's own curve, and the energy a simulated host
draws at a steady load; bad curves are refused with their place named."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import make_scenario
from sova.experiments.scenario_runs import run_profile
from sova.model.power_models import SPEC_POWER, curve_problem, host_curve, power_at
from sova.model.schema import InputError


def test_a_spec_table_gives_its_own_value_at_each_decile_and_a_straight_line_between():
    g4, g5 = host_curve("hp-ml110-g4", 0, 0), host_curve("hp-ml110-g5", 0, 0)
    curves = np.array([g4, g5, g4, g5, g4])
    util = np.array([0.45, 0.45, 0.0, 1.0, 0.8])
    # by hand: G4 at 45 %: 99.5 + (102 - 99.5) / 2; G5 at 45 %: 110 + (116 - 110) / 2
    assert power_at(curves, util) == pytest.approx([100.75, 113.0, 86.0, 135.0, 112.0])
    assert power_at(curves[:2], np.array([1.7, -0.2])) == pytest.approx([117.0, 93.7])  # clipped to 0-1
    ibm = host_curve("ibm-x3550-x5670", 0, 0)[None, :]
    assert power_at(ibm, np.array([0.05]))[0] == pytest.approx(86.5)  # by hand: halfway from 66 to 107


@settings(max_examples=50, deadline=None)
@given(st.floats(0, 500), st.floats(0, 500), st.floats(0, 1))
def test_the_linear_model_is_idle_plus_the_dynamic_range_times_the_utilisation(idle, extra, util):
    curve = host_curve("linear", idle, idle + extra)
    assert power_at(curve[None, :], np.array([util]))[0] == pytest.approx(idle + extra * util, abs=1e-9)


def test_every_spec_table_has_eleven_points_that_never_fall():
    for name, watts in SPEC_POWER.items():
        assert len(watts) == 11 and curve_problem(list(watts)) is None, name


def hosts_scenario(**host):
    return make_scenario(
        scenario={"duration": 600},
        hosts=[{"name": "h1", "cores": 2, **host}],
        vms=[{"name": "v1", "host": "h1", "vcpus": 1}],
        workloads=[{"vm": "v1", "kind": "lookbusy", "duty": 1.0, "util": 0.9}],
    )


def test_a_simulated_host_at_a_steady_load_draws_its_tables_power_for_the_run():
    result = run_profile(hosts_scenario(power_model="hp-ml110-g4"), "default")
    # one busy vCPU of two cores, 90 %: the host at 45 %, 100.75 W (G4), for 600 s
    assert result.summary["energy_kwh"] == pytest.approx(100.75 * 600 / 3.6e6, rel=0.01)


def test_a_custom_curve_is_used_as_given():
    curve = [50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150]
    result = run_profile(hosts_scenario(power_model="custom", power_curve=curve), "default")
    assert result.summary["energy_kwh"] == pytest.approx(95.0 * 600 / 3.6e6, rel=0.01)


@pytest.mark.parametrize(
    ("host", "message"),
    [
        ({"power_model": "custom"}, "expected 11 numbers"),
        ({"power_model": "custom", "power_curve": [1] * 10}, "expected 11 numbers"),
        ({"power_model": "custom", "power_curve": [1] * 10 + [float("nan")]}, "finite numbers of watts"),
        ({"power_model": "custom", "power_curve": [2] * 10 + [1]}, "must not fall"),
        ({"power_curve": [1] * 11}, "read only with power_model = custom"),
        ({"power_model": "hp-ml110-g9"}, "hp-ml110-g4"),
    ],
)
def test_a_bad_power_model_is_refused_with_its_place(host, message):
    with pytest.raises(InputError) as err:
        hosts_scenario(**host)
    assert message in str(err.value) and "[[hosts]]" in str(err.value)


def test_sla_metrics_by_hand():
    from sova.sim.sla import sla_metrics

    # host 0 short 30 of 100 s, host 1 short 0 of 50 s, host 2 never active: SLATAH = (0.3 + 0) / 2
    # VM 0 lost 2 of 100 core-s, VM 1 none of 300, VM 2 asked nothing: PDM = (0.02 + 0) / 2
    metrics = sla_metrics(
        np.array([100.0, 50.0, 0.0]),
        np.array([30.0, 0.0, 0.0]),
        np.array([100.0, 300.0, 0.0]),
        np.array([2.0, 0, 0]),
        10.0,
    )
    # pooled as CloudSim pools them: SLATAH = 30 / 150 s, PDM = 2 / 400 core-s
    assert metrics == pytest.approx(
        {
            "slatah_pct": 15.0,
            "pdm_pct": 1.0,
            "slav": 0.0015,
            "esv": 0.015,
            "slatah_pooled_pct": 20.0,
            "pdm_pooled_pct": 0.5,
        }
    )


def test_a_host_asked_for_more_cpu_than_it_has_counts_as_violating_its_sla_all_the_time():
    overloaded = make_scenario(
        scenario={"duration": 300},
        hosts=[{"name": "h1", "cores": 2}, {"name": "h2", "cores": 2}],
        vms=[{"name": "v{i}", "count": 3, "host": "h1", "vcpus": 1}, {"name": "w", "host": "h2", "vcpus": 1}],
        workloads=[{"vm": "*", "kind": "lookbusy", "duty": 1.0, "util": 1.0}],
    )
    summary = run_profile(overloaded, "default").summary
    assert summary["slatah_pct"] == pytest.approx(50.0, abs=1)  # h1 (3 busy vCPUs on 2 cores) all the time, h2 never
    assert summary["pdm_pct"] == 0 and summary["slav"] == 0  # no migration


def test_pdm_is_a_tenth_of_the_migrating_vms_share_of_time_in_migration():
    hot = make_scenario(
        scenario={"duration": 600},
        hosts=[{"name": "h{i}", "count": 2, "cores": 4}],
        vms=[{"name": "v{i}", "count": 4, "host": "h1", "vcpus": 1, "memory": 1024}],
        workloads=[{"vm": "v*", "kind": "lookbusy", "duty": 1.0, "util": 1.0}],
        profiles={"threshold": {"policies": ["threshold-migration"]}},
    )
    result = run_profile(hot, "threshold")
    migrations = result.summary["migrations"]
    assert migrations["completed"] >= 1
    # each busy VM asks one core all the run; one migrating for D s loses 0.1 core for D s (by hand), D
    # counted in whole fabric steps (1 s here): within a step of the migrations' own time
    pdm = result.summary["pdm_pct"] / 100
    steps = migrations["completed"] * hot.step
    assert (
        0.1 * (migrations["time_total"] - steps) / 600 / 4 <= pdm <= 0.1 * (migrations["time_total"] + steps) / 600 / 4
    )
    assert pdm > 0
