"""SASLO's experiments, run from their scenario files under scenarios/papers/saslo/: what comes out, and
(as strict expected failures) the paper's directions that do not yet."""

import pytest

from helpers import ROOT
from sova.control.experiment import run_scenario
from sova.control.profiles import check_profile
from sova.model.sweep import load_runs

PAPER = ROOT / "scenarios" / "papers" / "saslo"


@pytest.fixture(scope="module")
def fig6_sweep():
    sweep, runs = load_runs(PAPER / "fig6-disk-array.toml", check_profile)
    return {v: {r.profile: r.summary["slo"] for r in run_scenario(s)} for v, s in zip(sweep.values, runs, strict=True)}


def test_fig6_a_steady_array_lets_both_hold_every_target_and_a_varying_one_costs_both(fig6_sweep):
    for profile in ("static", "see"):
        assert all(s["avpe"] < 0.01 and s["sc_rate"] == 100 for s in fig6_sweep[0.0][profile].values())
        assert fig6_sweep[0.3][profile]["mail"]["sc_rate"] < 97  # the array's dips hold the mail server back


def test_fig6_integral_control_fluctuates_more_than_see_on_a_varying_array_as_the_paper_says(fig6_sweep):
    for vm in ("file", "mail"):
        assert fig6_sweep[0.3]["integral"][vm]["pf_ratio"] > fig6_sweep[0.3]["see"][vm]["pf_ratio"]


@pytest.mark.xfail(
    strict=True, reason="a limiter-paced VM gets its rate exactly; when the device binds, no limit helps"
)
def test_fig6_see_complies_far_more_than_a_fixed_throttle_as_the_paper_says(fig6_sweep):
    assert fig6_sweep[0.3]["see"]["mail"]["sc_rate"] > fig6_sweep[0.3]["static"]["mail"]["sc_rate"] + 3


def test_settling_see_reaches_each_new_target_within_the_designed_5_epochs():
    _, runs = load_runs(PAPER / "settling-disk-array.toml", check_profile)
    slo = {r.profile: r.summary["slo"] for r in run_scenario(runs[0])}
    for vm in ("web", "file", "mail"):
        assert 1 < slo["see"][vm]["settling_epochs"] < 5  # the paper: 3.5-4.5 on real devices
        assert slo["see"][vm]["target_changes"] > 500  # every 3 s for 30 min
