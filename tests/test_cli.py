"""The sova command: help, validate, run; bad input never gives a traceback or a half-written directory."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helpers import ROOT, SHARED_TRACES, SMALL
from sova.cli import main
from sova.cli.check import NEEDS_TRACES


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for cmd in ("run", "validate", "policies"):
        assert cmd in text
    for cmd in ("run", "validate", "policies"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        assert "usage: sova " + cmd in capsys.readouterr().out


def test_validate_accepts_the_shipped_scenarios(capsys):
    """Every shipped scenario is valid; on a clone without the public traces beside it (../shared), one that
    reads them is checked as far as it can be and said to need them, with where they come from."""
    said = ""
    for path in sorted((ROOT / "scenarios").rglob("*.toml")):
        status = main(["validate", str(path)])
        if status == NEEDS_TRACES and not SHARED_TRACES.is_dir():
            err = capsys.readouterr().err
            assert "comes from: " in err and "point at it: --param " in err, path
            continue
        assert status == 0, path
        said += capsys.readouterr().out
    assert "ok" in said


PLANETLAB = ROOT / "scenarios" / "papers" / "cloudsim" / "planetlab.toml"


def test_validate_says_which_traces_are_absent_where_they_come_from_and_the_param_that_points_at_them(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    assert main(["validate", str(PLANETLAB), "--param", f"traces={elsewhere}"]) == NEEDS_TRACES == 3
    captured = capsys.readouterr()
    assert "ok" not in captured.out and "problem(s) found" not in captured.err
    lines = captured.err.splitlines()
    assert lines[0].startswith(f"needs traces: {PLANETLAB}: no problem found but that traces it reads are not there")
    assert lines[1:3] == [
        f"  not there: {elsewhere / '20110303'}",
        "    read by: [[vms]] #1 (vm{i}).files, [[vms]] #2 (vm{i}).files, [[vms]] #3 (vm{i}).files, "
        "[[vms]] #4 (vm{i}).files, [[workloads]] #1.file",
    ]
    # the scenario's own value names the PlanetLab set: where it comes from, though the path is the user's
    assert lines[3].startswith("    comes from: PlanetLab per-VM CPU of March-April 2011")
    assert "github.com/Cloudslab/cloudsim" in lines[3]
    assert lines[4] == f"    point at it: --param traces=DIR, DIR holding 20110303 (now {str(elsewhere)!r})"
    assert len(lines) == 5  # nothing else: the VMs of the absent set are no duplicates of one another


def test_traces_that_are_there_without_the_day_asked_for_are_said_to_hold_no_such_day(tmp_path, capsys):
    args = ["validate", str(PLANETLAB), "--param", f"traces={tmp_path}", "--param", "day=20110399"]
    assert main(args) == NEEDS_TRACES
    assert f"point at it: traces = {str(tmp_path)!r} is there but holds no 20110399: check day (now 20110399)" in (
        capsys.readouterr().err
    )


def test_an_absent_trace_path_written_in_the_scenario_is_to_be_corrected_there(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        '[scenario]\nname = "s"\nduration = 60\n\n[[hosts]]\nname = "h1"\n\n'
        '[[vms]]\nname = "vm{i}"\nfiles = "day1"\nhost = "h1"\n\n'
        '[[workloads]]\nvm = "vm*"\nkind = "planetlab"\nfile = "day1"\n'
    )
    assert main(["validate", str(scenario)]) == NEEDS_TRACES
    err = capsys.readouterr().err
    assert f"not there: {tmp_path / 'day1'}" in err and "comes from" not in err  # no public set it knows
    assert "point at it: the path is written in the scenario (no [params] value holds it); correct it there" in err


def test_absent_traces_beside_another_problem_are_one_of_the_problems(tmp_path, capsys):
    args = ["validate", str(PLANETLAB), "--param", f"traces={tmp_path / 'elsewhere'}", "--param", "host_memory=-1"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "[[hosts]] #1 (g4-{i}).memory: got -1.0" in err
    assert f"[[vms]] #1 (vm{{i}}).files: trace set {str(tmp_path / 'elsewhere' / '20110303')!r} does not exist" in err
    assert "used twice" not in err and "7 problem(s) found" in err and "needs traces" not in err


def test_validate_help_documents_its_exit_statuses(capsys):
    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit status: 0 valid; 2 problems found (each printed); 3 no problem found but that trace files" in text


def test_validate_reports_each_problem_with_its_location(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(SMALL.replace("cores = 4", "cores = -1").replace('"threshold-migration"', '"threshold-migraton"'))
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "[[hosts]] #1 (h{i}).cores: got -1; expected an integer >= 1" in err
    assert (
        "[profiles.threshold].policies: unknown policy 'threshold-migraton' (did you mean 'threshold-migration'?)"
        in err
    )
    assert "2 problem(s) found" in err
    assert "Traceback" not in err


def test_policy_parameters_are_validated(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(SMALL + "\n[profiles.threshold.params.threshold-migration]\nhot = 3\n")
    assert main(["validate", str(bad)]) == 2
    assert (
        "[profiles.threshold.params.threshold-migration].hot: got 3.0; expected a number >= 0 and <= 1"
        in capsys.readouterr().err
    )


def test_run_writes_every_output(small, tmp_path):
    out = tmp_path / "res"
    assert main(["run", str(small), "--out", str(out), "--quiet"]) == 0
    names = {p.name for p in out.iterdir()}
    assert {
        "summary.json",
        "report.html",
        "metrics.parquet",
        "audit-threshold.jsonl",
    } <= names
    assert not any(n.startswith("metrics-") for n in names)  # CSV on request ([outputs] csv = true)
    assert any(n.endswith(".png") for n in names)
    doc = json.loads((out / "summary.json").read_text())
    assert set(doc["profiles"]) == {"default", "threshold"}
    assert doc["profiles"]["threshold"]["migrations"]["completed"] >= 1
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "threshold" in html and "default" in html


def test_unknown_profile_and_bad_seed(small, tmp_path, capsys):
    assert main(["run", str(small), "--out", str(tmp_path / "r"), "--profile", "nope"]) == 2
    assert "--profile nope: no such profile; the scenario defines default, threshold" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # argparse: a usage error
        main(["run", str(small), "--out", str(tmp_path / "r"), "--seed", "-1"])
    assert exc.value.code == 2
    assert "argument --seed: expected a whole number from 0 to 2^63 - 1, got '-1'" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_a_report_that_fails_after_the_runs_keeps_what_was_simulated_and_the_error(small, tmp_path, monkeypatch):
    import sova.report.writer as writer

    def broken(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(writer, "make_plots", broken)
    assert main(["run", str(small), "--out", str(tmp_path / "r"), "--quiet"]) == 1
    out = tmp_path / "r"
    assert "writing the results failed: RuntimeError: disk on fire" in (out / "error.txt").read_text()
    doc = json.loads((out / "summary.json").read_text())
    assert doc["incomplete"] == {
        "failed": "writing the results",
        "error": "RuntimeError: disk on fire",
        "finished": 2,
        "runs": 2,
    }
    assert [run["profile"] for run in doc["runs"]] == ["default", "threshold"]
    assert doc["runs"][1]["summary"]["migrations"]["completed"] >= 1
    assert not (out / "report.html").exists()  # nothing the failed writer left half-done
    assert pq.read_table(out / "metrics.parquet").column("profile").unique().to_pylist() == ["default", "threshold"]


def test_the_installed_command_runs_as_a_program(small, tmp_path):
    exe = shutil.which("sova") or str(Path(sys.executable).parent / "sova")
    done = subprocess.run([exe, "validate", str(small)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [exe, "validate", str(tmp_path / "missing.toml")], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and "no such file" in done.stderr and "Traceback" not in done.stderr


def test_per_vm_metrics_follow_a_migration(small, tmp_path):
    per_vm = tmp_path / "pervm.toml"
    per_vm.write_text(SMALL + "\n[outputs]\nper_vm = true\nsample_every = 10\ncsv = true\n")
    out = tmp_path / "res"
    assert main(["run", str(per_vm), "--out", str(out), "--quiet", "--profile", "threshold"]) == 0
    import csv

    rows = list(csv.DictReader((out / "metrics-threshold.csv").open()))
    assert len(rows) == 12  # 120 s sampled every 10 s
    hosts = {r["vm_host:v1"] for r in rows} | {r["vm_host:v2"] for r in rows} | {r["vm_host:v3"] for r in rows}
    assert hosts == {"h1", "h2"}  # one of them moved
    assert float(rows[-1]["vm_cpu:v4"]) > 0


HELP = [
    ["run"],
    ["validate"],
    ["policies"],
    ["place"],
    ["predict"],
    ["lab"],
    ["lab", "up"],
    ["lab", "load"],
    ["manage"],
    [],
]


@pytest.mark.parametrize("command", HELP, ids=[" ".join(c) or "sova" for c in HELP])
def test_help_is_wrapped_has_a_description_and_examples(command, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as exc:
        main([*command, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    head = text.split("\npositional arguments:")[0].split("\noptions:")[0]
    description = head.split("\n\n", 1)[1]  # after the usage lines
    assert len(description.split()) >= 10, description
    assert all(len(line) <= 80 for line in description.splitlines()), description
    assert "%%" not in text
    assert "examples:\n  sova " in text or "examples:\n  sudo sova " in text


def test_policies_lists_the_builtin_profiles_in_aligned_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    assert main(["policies"]) == 0
    text = capsys.readouterr().out
    assert "built-in profiles" in text and "threshold-migration" in text
    rows = [line for line in text.splitlines() if line.startswith((" period ", " window "))]
    assert len(rows) > 3
    assert len({row.index(row.split()[1], len(row.split()[0]) + 1) for row in rows}) == 1  # second column aligned


def test_predict_prints_each_vms_slowdown_and_what_if_one_moved(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["predict", str(ROOT / "scenarios" / "quickstart.toml"), "--window", "20", "--vm", "web1"]) == 0
    text = capsys.readouterr().out
    assert "predicted slowdown" in text and "burn1" in text and "web1 on each host" in text and "(now)" in text


def test_predict_refuses_a_vm_the_scenario_does_not_have(capsys):
    assert main(["predict", str(ROOT / "scenarios" / "quickstart.toml"), "--vm", "nope"]) == 2
    assert "--vm: no VM named 'nope'" in capsys.readouterr().err


def test_predict_runs_the_chosen_value_of_a_sweep(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    fig6 = str(ROOT / "scenarios" / "papers" / "cloudscope" / "fig6-mixed.toml")
    assert main(["predict", fig6, "--window", "20", "--value", "6"]) == 0
    text = capsys.readouterr().out
    assert "count = 6" in text and "mix6" in text and "mix7" not in text


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ("papers/cloudscope/fig6-mixed.toml", "'12' is not one of the sweep's values of count: 1, 6, 11, 16, 21"),
        ("quickstart.toml", "quickstart.toml has no [sweep] to take a value of"),
    ],
)
def test_predict_refuses_a_value_the_file_does_not_sweep(scenario, message, capsys):
    assert main(["predict", str(ROOT / "scenarios" / scenario), "--value", "12"]) == 2
    assert message in capsys.readouterr().err
