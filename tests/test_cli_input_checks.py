"""What a newcomer gave the CLI tools and got no clear answer to (issue 30): --window as a duration and never
past the scenario's end, `sova place` on a sweep file, the MILP solver's banner, `sova slo set`'s ranges and
negative values, and `sova policies` cutting the meaning of each parameter."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from rich.console import Console

from helpers import ROOT, SMALL
from sova.cli import check, main

PAIRS = str(ROOT / "scenarios" / "examples" / "placement-pairs.toml")  # 20 min
QUICKSTART = str(ROOT / "scenarios" / "quickstart.toml")  # 30 min
FIG6 = ROOT / "scenarios" / "papers" / "cloudscope" / "fig6-mixed.toml"  # a sweep of count


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    """sova ARGV: its exit status (argparse's usage errors too), stdout and stderr."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("argv", "measured"),
    [
        (["place", PAIRS, "--algorithm", "greedy-fill", "--window", "10min"], "(measured 600 s)"),
        (["predict", QUICKSTART, "--window", "90s"], "(measured 90 s)"),
        (["place", PAIRS, "--algorithm", "greedy-fill", "--window", "30"], "(measured 30 s)"),
    ],
)
def test_a_window_is_taken_as_a_duration_as_a_scenario_writes_one(argv, measured, capsys):
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert measured in " ".join(out.split())  # the table's title, folded to the table's width


@pytest.mark.parametrize("window", ["10parsecs", "-1min", "0", "1e400"])
def test_a_window_that_is_no_positive_duration_is_a_usage_error_naming_the_flag(window, capsys):
    code, _, err = run(["place", PAIRS, "--algorithm", "greedy-fill", "--window", window], capsys)
    assert code == 2
    assert f"--window: expected a positive number of seconds, got '{window}' (or a duration, like '10min')" in err


def test_a_window_longer_than_the_scenario_is_refused_naming_its_duration(tmp_path, capsys):
    short = tmp_path / "short.toml"
    short.write_text(SMALL.replace("duration = 120", "duration = 30"))
    code, out, err = run(["predict", str(short), "--window", "1000"], capsys)
    assert code == 2 and not out
    assert (
        f"--window: 1000 s is longer than {short}'s duration of 30 s ([scenario].duration); expected at most 30 s"
        in err
    )
    code, out, err = run(["place", PAIRS, "--algorithm", "greedy-fill", "--window", "21min"], capsys)
    assert code == 2 and not out
    assert f"--window: 1260 s is longer than {PAIRS}'s duration of 1200 s" in err


def test_placing_a_sweep_file_is_refused_naming_the_file_and_its_sweep_key(capsys):
    code, out, err = run(["place", str(FIG6), "--algorithm", "greedy-fill", "--window", "5"], capsys)
    assert code == 2 and not out
    assert f"error: {FIG6}: [sweep]: a sweep of key count (table vms) over 5 values (1, 6, 11, 16, 21)" in err
    assert "cannot be placed: `sova place` places one scenario" in err
    assert "expected a file without [sweep]" in err


def test_the_model_algorithm_prints_no_solver_banner():
    # a process of its own: HiGHS prints its banner once a process, from C, past pytest's capture
    done = subprocess.run(
        [sys.executable, "-m", "sova.cli", "place", PAIRS, "--algorithm", "model", "--window", "30"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "move(s); optimizer" in done.stdout
    assert "HiGHS" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--throughput", "600", "400"],
            "--throughput: VM 'vm1': throughput lower bound 600 is above the upper bound 400",
        ),
        (["--throughput", "0", "0"], "--throughput: VM 'vm1': throughput upper bound must be > 0 IOPS, got 0"),
        (["--sc", "90", "80"], "--sc: VM 'vm1': sc_rate lower bound 90 is above the upper bound 80"),
        (["--pf", "20", "10"], "--pf: VM 'vm1': pf_ratio lower bound 20 is above the upper bound 10"),
        (["--io-size", "1", "4KiB"], "--io-size: VM 'vm1': io_size lower bound must be >= 512 bytes, got 1"),
    ],
)
def test_slo_set_checks_its_ranges_before_sending(args, expected, tmp_path, capsys):
    code, _, err = run(["slo", "set", "vm1", *args, "--socket", str(tmp_path / "none.sock")], capsys)
    assert code == 2
    assert expected in err and "no sova manage is listening" not in err  # refused here, nothing sent


@pytest.mark.parametrize(
    "args", [["--latency", "-20ms"], ["--latency=-20ms"], ["--latency", "-0.02"], ["--latency", "0"]]
)
def test_a_latency_that_is_not_above_zero_is_refused_as_such_with_or_without_equals(args, tmp_path, capsys):
    code, _, err = run(["slo", "set", "vm1", *args, "--socket", str(tmp_path / "none.sock")], capsys)
    assert code == 2
    assert "argument --latency: a latency target must be above 0, like 20ms" in err


def _docs() -> list[str]:
    from sova.plan.base import registry

    return [f.doc for cls in registry().values() for f in cls.schema.values() if f.doc]


def test_policies_folds_the_meaning_column_to_a_narrow_terminal(monkeypatch):
    screen = io.StringIO()
    monkeypatch.setattr(check, "out", Console(file=screen, force_terminal=True, width=80, color_system=None))
    assert main(["policies"]) == 0
    rows = [line for line in screen.getvalue().splitlines() if line.startswith(" ")]  # titles are not folded
    assert rows and all(len(line) <= 80 for line in rows)
    words = set(screen.getvalue().split())
    assert [w for doc in _docs() for w in doc.split() if w not in words] == []  # every word whole: folded, not cut


def test_policies_piped_cuts_and_folds_nothing(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["policies"]) == 0
    text = capsys.readouterr().out
    assert [doc for doc in _docs() if doc not in text] == []  # each meaning whole on one line
