"""benchmarks/compare.py's parts that decide what it reports: the parsers, on lines the benchmark scripts
printed at fc3dd7b (issue 35's base) and at this tree's commit (captured from --quick-sized runs), the
BASE check, the --json file, and the ratio's words. No benchmark runs here."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SIM_SPEED_HEADER = (
    "| hosts | VMs | flows | set-up (s) | simulated s / wall s | peak RSS (MiB) |\n|---:|---:|---:|---:|---:|---:|\n"
)
SIM_SPEED_NOW = SIM_SPEED_HEADER + "| 10 | 100 | 100 | 0.3 | 370 | 108 |\n"  # --sizes 10 --loop dsriov-vlm
SIM_SPEED_BASE = SIM_SPEED_HEADER + "| 10 | 100 | 100 | 0.7 | 188 | 108 |\n"  # --sizes 10 --loop sova
DECISION_HEADER = "| hosts | VMs | decision round (s), best of repeats | actions |\n|---:|---:|---:|---:|\n"
DECISION_NOW = DECISION_HEADER + "| 100 | 1,000 | 0.019 | 515 |\n"
DECISION_BASE = DECISION_HEADER + "| 100 | 1,000 | 0.048 | 515 |\n"
LOAD_DC_100K = "| dc-100k | 10,000 | 100,000 | 3 | 6.9 | 3.2 | 10.1 | 1.05 |\n"  # both trees printed this
LOAD_OPENDC_NOW = "| opendc-50 | 5 | 50 | 1 | 0.0 | 0.3 | 0.3 | 0.18 |\n"
PLANETLAB = """day 20110303: 800 hosts, 1052 VMs; scenario loaded in {load} s
| profile | wall (s) | migrations | energy (kWh) |
|---|---:|---:|---:|
| thr-mmt-0.8 | {wall} | {migrations} | 725.8 |
peak RSS {rss} MiB
"""
PLANETLAB_NOW = PLANETLAB.format(load="0.22", wall="10.11", migrations=250, rss=149)
PLANETLAB_BASE = PLANETLAB.format(load="0.48", wall="5.82", migrations=244, rss=122)


@pytest.fixture(scope="module")
def benchmarks():
    """benchmarks/ on the import path, as it is for the scripts run from there."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    yield
    sys.path.remove(str(ROOT / "benchmarks"))


@pytest.fixture(scope="module")
def measures(benchmarks):
    return importlib.import_module("compare_measures")


@pytest.fixture(scope="module")
def compare(benchmarks):
    return importlib.import_module("compare")


def test_sim_speed_reads_simulated_seconds_per_wall_second_in_both_trees(measures):
    assert measures.parse_sim_speed(SIM_SPEED_NOW) == {"sim_s_per_wall_s": 370.0}
    assert measures.parse_sim_speed(SIM_SPEED_BASE) == {"sim_s_per_wall_s": 188.0}


def test_decision_round_reads_the_best_round_in_both_trees(measures):
    assert measures.parse_decision_round(DECISION_NOW) == {"round_s": 0.019}
    assert measures.parse_decision_round(DECISION_BASE) == {"round_s": 0.048}


def test_scenario_load_reads_total_seconds_and_peak_gib_from_its_headerless_row(measures):
    assert measures.parse_scenario_load(LOAD_DC_100K) == {"total_s": 10.1, "peak_gib": 1.05}
    assert measures.parse_scenario_load(LOAD_OPENDC_NOW) == {"total_s": 0.3, "peak_gib": 0.18}


def test_planetlab_day_reads_the_profiles_wall_seconds_in_both_trees(measures):
    assert measures.parse_planetlab_day(PLANETLAB_NOW) == {"wall_s": 10.11}
    assert measures.parse_planetlab_day(PLANETLAB_BASE) == {"wall_s": 5.82}


def test_a_table_without_its_row_is_an_error_naming_the_script(measures):
    with pytest.raises(measures.OutputError, match=r"decision_round\.py: expected one table row, found 0"):
        measures.parse_decision_round(DECISION_HEADER)  # what it printed before it failed at 1a0d1a1
    with pytest.raises(measures.OutputError, match=r"for thr-mmt-0\.8"):
        measures.parse_planetlab_day(PLANETLAB_NOW.replace("thr-mmt-0.8", "npa"))


def test_thousands_separators_are_read_and_words_refused(measures):
    assert measures.number("1,072") == 1072.0
    with pytest.raises(measures.OutputError, match="expected a number, got 'skipped'"):
        measures.number("skipped")


def test_the_loop_runs_the_papers_policy_under_the_name_each_tree_knows(measures, tmp_path):
    assert measures.loop_policy(ROOT) == "dsriov-vlm"
    assert measures.loop_policy(tmp_path) == "sova"  # a tree from before 3db4f8e has no plan/dsriov_vlm.py
    loop = next(m for m in measures.MEASURES if m.name == "loop-10k")
    assert loop.full.args(tmp_path, {"seconds": 1200, "seconds_10k": 300}) == [
        "--sizes",
        "1000",
        "--loop",
        "sova",
        "--seconds",
        "300",
    ]


def test_a_commit_resolves_to_its_hash(compare):
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert compare.resolve_commit(ROOT, "HEAD") == head.strip()


def test_a_bad_base_is_refused_by_name_before_anything_runs(compare, capsys):
    worktrees = subprocess.run(["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True).stdout
    assert compare.main(["no-such-commit", "--quick"]) == 1
    assert "BASE 'no-such-commit' is not a commit of" in capsys.readouterr().err
    with pytest.raises(compare.CompareError, match=r"BASE 'HEAD\^\{tree\}' is not a commit"):
        compare.resolve_commit(ROOT, "HEAD^{tree}")  # an object, but not a commit
    after = subprocess.run(["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True).stdout
    assert after == worktrees


def test_the_json_file_is_checked_before_the_runs_and_written_whole(compare, tmp_path):
    with pytest.raises(compare.CompareError, match="no directory"):
        compare.check_writable(tmp_path / "missing" / "out.json")
    with pytest.raises(compare.CompareError, match="is a directory"):
        compare.check_writable(tmp_path)
    target = tmp_path / "out.json"
    compare.check_writable(target)
    compare.write_atomically(target, {"ratio": 1.5})
    assert target.read_text() == '{\n  "ratio": 1.5\n}\n'
    assert list(tmp_path.iterdir()) == [target]  # no temporary file left beside it


def test_ratios_read_as_faster_or_slower_for_speeds_and_as_the_time_otherwise(compare):
    assert compare.ratio_text(1.5, "speed") == "1.50x faster"
    assert compare.ratio_text(0.5, "speed") == "2.00x slower"
    assert compare.ratio_text(1.1, "time") == "1.10x the time"
    assert compare.ratio_text(0.9, "memory") == "0.90x the memory"
    assert compare.range_text([0.019, 0.048, 0.02]) == "0.019-0.048"
    assert compare.range_text([1072.0, 1072.4]) == "1,072"
    assert compare.range_text([0.3, 0.3]) == "0.3"
