"""The sova command: help, validate, run; bad input never gives a traceback or a half-written directory."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, SMALL
from sova.cli import main


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
    for path in sorted((ROOT / "scenarios").rglob("*.toml")):
        assert main(["validate", str(path)]) == 0, path
    assert "ok" in capsys.readouterr().out


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
    assert "argument --seed: expected a non-negative integer, got '-1'" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_a_run_that_fails_midway_leaves_no_directory(small, tmp_path, monkeypatch):
    import sova.report.writer as writer

    def broken(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(writer, "make_plots", broken)
    with pytest.raises(RuntimeError):
        main(["run", str(small), "--out", str(tmp_path / "r"), "--quiet"])
    assert list(tmp_path.iterdir()) == [small]


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
