"""SASLO's experiments, run from their scenario files under scenarios/papers/saslo/: what comes out, and
(as strict expected failures) the paper's directions that do not yet."""

import pytest

from helpers import ROOT
from sova.control.experiment import run_scenario
from sova.control.profiles import check_profile
from sova.model.sweep import load_runs

PAPER = ROOT / "scenarios" / "papers" / "saslo"


@pytest.fixture(scope="module")
def fig6_disk():
    _, runs = load_runs(PAPER / "fig6-disk-array.toml", check_profile)
    return {r.profile: r.summary["slo"] for r in run_scenario(runs[0])}


def test_fig6_both_hold_the_web_and_file_servers_to_their_targets(fig6_disk):
    for profile in ("static", "see"):
        for vm in ("web", "file"):
            assert fig6_disk[profile][vm]["avpe"] < 0.5 and fig6_disk[profile][vm]["sc_rate"] > 95


@pytest.mark.xfail(
    strict=True, reason="the array saturates: SEE's PI lifts the file server into the mail server's share"
)
def test_fig6_see_serves_the_mail_server_better_than_a_fixed_throttle_as_the_paper_says(fig6_disk):
    assert fig6_disk["see"]["mail"]["sc_rate"] > fig6_disk["static"]["mail"]["sc_rate"]
