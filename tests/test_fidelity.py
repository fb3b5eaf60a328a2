"""docs/fidelity.md is what the committed result files render, the quick experiments reproduce their committed
metrics, and a claim's verdict follows its definition."""

import pytest

from helpers import ROOT
from sova.report.fidelity.claims import AGREE, DIRECTION, FITTED, MISS, Claim
from sova.report.fidelity.document import DOCUMENT, Result, load_result, load_results, render, save_result
from sova.report.fidelity.registry import CLAIMS, EXPERIMENTS, experiment


def test_every_experiment_has_a_committed_result_holding_each_metric_its_claims_read():
    results = load_results(ROOT, EXPERIMENTS)
    assert sorted(results) == sorted(e.name for e in EXPERIMENTS)
    for claim in CLAIMS:
        assert claim.metric in results[claim.experiment].metrics, (claim.experiment, claim.metric)


def test_the_committed_document_is_what_the_committed_results_render():
    expected = render(CLAIMS, EXPERIMENTS, load_results(ROOT, EXPERIMENTS))
    assert (ROOT / DOCUMENT).read_text() == expected, "run: python scripts/fidelity.py --render"


@pytest.mark.parametrize("name", [e.name for e in EXPERIMENTS if e.quick])
def test_a_quick_experiment_measures_again_what_its_result_file_holds(name):
    stored = load_result(ROOT, name)
    assert stored is not None
    assert experiment(name).measure(ROOT) == pytest.approx(stored.metrics, rel=1e-9, abs=1e-12), (
        f"the simulator's numbers moved: python scripts/fidelity.py --only {name}"
    )


def claim(**fields) -> Claim:
    return Claim(**({"paper": "P", "figure": "Fig. 1", "quantity": "q", "paper_says": "s", "experiment": "e"} | fields))


def test_a_number_within_the_tolerance_agrees_and_one_outside_with_the_direction_is_direction_only():
    within = claim(metric="x", target=10.0, tolerance=0.1, direction=lambda m: m["x"] > 5)
    assert within.verdict({"x": 10.9}) == AGREE
    assert within.verdict({"x": 11.5}) == DIRECTION
    assert within.verdict({"x": 4.0}) == MISS
    assert within.error({"x": 11.0}) == pytest.approx(0.1)


def test_a_percentage_errs_in_points():
    points = claim(metric="x", unit="%", target=94.0, tolerance=10)
    assert points.error({"x": 50.0}) == pytest.approx(-44.0)
    assert points.verdict({"x": 85.0}) == AGREE and points.verdict({"x": 50.0}) == MISS


def test_words_only_claims_agree_exactly_when_their_direction_holds():
    words = claim(metric="x", direction=lambda m: m["x"] < 1)
    assert words.verdict({"x": 0.5}) == AGREE and words.verdict({"x": 2}) == MISS
    assert words.error({"x": 0.5}) is None


def test_a_bound_replaces_the_target_and_a_fitted_point_is_never_evidence():
    bounded = claim(metric="x", bound=lambda v: v <= 20, direction=lambda m: m["x"] < 100)
    assert bounded.verdict({"x": 13.5}) == AGREE and bounded.verdict({"x": 40}) == DIRECTION
    fitted = claim(metric="x", target=1.7, fitted="sched_overhead")
    assert fitted.verdict({"x": 1.7}) == FITTED and fitted.verdict({"x": 9.0}) == FITTED


def test_a_result_file_round_trips_and_the_document_says_not_run_without_one(tmp_path):
    result = Result("e", {"x": 1.5}, "abc1234", "2026-11-27", 2.0, 1.5, {"p/e.toml": [2.0, 1.5, 1]})
    save_result(tmp_path, result)
    assert load_result(tmp_path, "e") == result
    assert list((tmp_path / "benchmarks" / "data" / "fidelity").iterdir()) == [
        tmp_path / "benchmarks/data/fidelity/e.json"
    ]
    text = render([claim(metric="x", target=1.0)], [], {})
    assert "| not run |" in text
