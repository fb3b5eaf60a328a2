"""The whole MAPE-K pipeline on the quickstart scenario: a hotspot appears, is detected, and is relieved."""

import pytest

from helpers import ROOT
from sova.experiments.scenario_runs import run_scenario
from sova.model.sweep import load_scenario


@pytest.fixture(scope="module")
def results(request):
    s = load_scenario(ROOT / "scenarios" / "quickstart.toml")
    return {r.profile: r for r in run_scenario(s)}


def test_default_profile_never_acts(results):
    r = results["default"]
    assert r.summary["migrations"]["count"] == 0 and not r.audit.entries


def test_threshold_policy_moves_load_off_the_hot_host_then_stays_quiet(results):
    r = results["threshold"]
    moves = r.migrations
    assert moves and all(m.src == "hm1" and m.status == "completed" for m in moves)
    assert all(m.started >= 600 for m in moves)  # the hotspot starts at 10 min
    assert max(m.started for m in moves) < 900  # and the policy is done well before the end
    d, t = results["default"].summary["cpu"], r.summary["cpu"]
    assert t["hot_host_fraction"] < d["hot_host_fraction"]
    assert t["host_util_max_p95"] < d["host_util_max_p95"]


def test_every_decision_has_a_reason_and_an_outcome(results):
    audit = results["threshold"].audit.entries
    proposed = [e for e in audit if e.event == "proposed"]
    finished = [e for e in audit if e.event == "finished"]
    assert proposed and all("CPU above" in e.reason for e in proposed)
    assert len(finished) == len(proposed) and all(e.status == "ok" for e in finished)
