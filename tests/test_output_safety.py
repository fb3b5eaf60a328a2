"""Result directories: nothing of a user's is ever deleted, a place that cannot be written fails before the run,
a signal or a crash leaves nothing half-written, and the main job (`make run`) runs again and again."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import ROOT, SMALL
from sova.cli import main
from sova.report.result_dir import MARKER


def _run(small: Path, out: Path, *extra: str) -> int:
    return main(["run", str(small), "--out", str(out), "--quiet", *extra])


def _no_run(monkeypatch) -> None:
    """Fail the test if a simulation starts: the check must come before the run."""
    import sova.control.experiment as experiment

    def refuse(*a, **k):
        raise AssertionError("the run started although its output cannot be written")

    monkeypatch.setattr(experiment, "run_scenario", refuse)


def test_force_never_deletes_a_directory_sova_did_not_write(small, tmp_path, capsys, monkeypatch):
    out = tmp_path / "d"
    out.mkdir()
    (out / "thesis.txt").write_text("years of work")
    _no_run(monkeypatch)
    assert _run(small, out, "--force") == 2
    err = capsys.readouterr().err
    assert "thesis.txt" in err and "did not write" in err and "Traceback" not in err
    assert (out / "thesis.txt").read_text() == "years of work"
    assert sorted(p.name for p in out.iterdir()) == ["thesis.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "small.toml"]


def test_results_are_replaced_only_with_force_and_only_what_sova_wrote(small, tmp_path, capsys):
    out = tmp_path / "res"
    assert _run(small, out) == 0
    marker = json.loads((out / MARKER).read_text())
    assert marker["state"] == "complete" and "metrics-threshold.csv" in marker["files"]
    assert _run(small, out) == 2
    assert "pass --force" in capsys.readouterr().err
    (out / "my-notes.txt").write_text("keep me")
    assert _run(small, out, "--force", "--profile", "default") == 0
    assert "kept 1 file(s)" in capsys.readouterr().err
    assert (out / "my-notes.txt").read_text() == "keep me"
    assert not (out / "metrics-threshold.csv").exists()  # Sova's own, from the first run: gone
    assert (out / "metrics-default.csv").exists()
    assert json.loads((out / "summary.json").read_text())["profiles"].keys() == {"default"}
    assert "my-notes.txt" not in json.loads((out / MARKER).read_text())["files"]
    assert not [p for p in out.iterdir() if p.name.startswith(".sova-partial")]


def test_a_file_of_someone_else_with_a_result_name_sends_the_results_beside_it(small, tmp_path, capsys):
    out = tmp_path / "res"
    assert _run(small, out, "--profile", "default") == 0
    marker = json.loads((out / MARKER).read_text())
    marker["files"].remove("report.html")  # as if the user had written their own report.html there
    (out / MARKER).write_text(json.dumps(marker))
    (out / "report.html").write_text("<p>my own report</p>")
    assert _run(small, out, "--force", "--profile", "default") == 0
    assert "report.html" in capsys.readouterr().err
    assert (out / "report.html").read_text() == "<p>my own report</p>"
    assert (tmp_path / "res-2" / "summary.json").exists() and (tmp_path / "res-2" / MARKER).exists()


def test_out_dot_with_force_replaces_in_place(small, tmp_path, monkeypatch):
    out = tmp_path / "here"
    out.mkdir()
    monkeypatch.chdir(out)
    assert _run(small, Path(".")) == 0
    assert _run(small, Path("."), "--force") == 0
    assert (out / "summary.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here", "small.toml"]  # no ..old.* left beside it


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("/proc/x", "cannot write in /proc"),
        ("{tmp}/a-file/x", "a-file is a file, not a directory"),
        ("{tmp}/a-file", "exists and is not a directory"),
    ],
)
def test_an_output_that_cannot_be_written_fails_before_the_run(small, tmp_path, capsys, monkeypatch, where, expected):
    (tmp_path / "a-file").write_text("")
    _no_run(monkeypatch)
    assert _run(small, Path(where.format(tmp=tmp_path))) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


def test_a_run_into_new_nested_directories_that_fails_removes_them(small, tmp_path, monkeypatch):
    import sova.report.writer as writer

    def broken(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(writer, "make_plots", broken)
    with pytest.raises(RuntimeError):
        _run(small, tmp_path / "a" / "b" / "res")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o755), (0o002, 0o775), (0o077, 0o700)])
def test_result_directories_follow_the_umask(small, tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        assert _run(small, tmp_path / "new" / "res", "--profile", "default") == 0
    finally:
        os.umask(old)
    assert (tmp_path / "new" / "res").stat().st_mode & 0o777 == mode
    assert (tmp_path / "new").stat().st_mode & 0o777 == mode
    assert (tmp_path / "new" / "res" / "summary.json").stat().st_mode & 0o777 == mode & 0o666


def _sova(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "sova.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for(condition, proc: subprocess.Popen, what: str, limit: float = 120.0):
    """Poll until condition() is true (the run reached the point the test needs)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        if proc.poll() is not None:
            pytest.fail(f"sova ended before {what}: {proc.stderr.read()}")
        time.sleep(0.005)
    proc.kill()
    pytest.fail(f"timed out waiting for {what}")


def _staging(parent: Path, name: str) -> list[Path]:
    return [p for p in parent.iterdir() if p.name.startswith(f".{name}.sova-partial-")]


def test_sigterm_while_results_are_written_leaves_nothing(tmp_path):
    many = tmp_path / "many.toml"  # eight profiles: writing their plots takes long enough to be caught
    many.write_text(SMALL + "".join(f"\n[profiles.copy{k}]\n" for k in range(6)))
    out = tmp_path / "res"
    proc = _sova("run", str(many), "--out", str(out), "--quiet")
    _wait_for(lambda: [d for d in _staging(tmp_path, "res") if (d / "summary.json").exists()], proc, "writing")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "terminated; nothing was written" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["many.toml"]


def test_the_staging_directory_of_a_killed_run_is_removed_by_the_next_run(small, tmp_path):
    out = tmp_path / "res"
    proc = _sova("run", str(small), "--out", str(out), "--quiet")
    left = _wait_for(lambda: [d for d in _staging(tmp_path, "res") if (d / MARKER).exists()], proc, "staging")
    proc.kill()
    proc.communicate()
    assert left[0].exists()
    assert _run(small, out, "--profile", "default") == 0
    assert not _staging(tmp_path, "res") and (out / "summary.json").exists()


def test_a_staging_directory_of_a_running_run_is_left_alone(small, tmp_path):
    busy = tmp_path / ".res.sova-partial-0000"
    busy.mkdir()
    (busy / MARKER).write_text(json.dumps({"state": "partial", "pid": os.getpid()}))
    theirs = tmp_path / ".res.sova-partial-1111"  # the name, but not Sova's content: not Sova's to remove
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    unborn = tmp_path / ".res.sova-partial-2222"  # killed between making the directory and its marker
    unborn.mkdir()
    assert _run(small, tmp_path / "res", "--profile", "default") == 0
    assert busy.exists() and (theirs / "notes.txt").exists() and not unborn.exists()


def test_make_run_succeeds_again_and_again():
    for _ in range(2):
        done = subprocess.run(["make", "-s", "run"], cwd=ROOT, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "results in" in done.stdout
    assert (ROOT / "results" / "quickstart" / "report.html").exists()


TRIALS = """
[scenario]
name = "trials"
duration = 30
seed = 7

[topology]
kind = "three-tier"
racks = 2
hosts_per_rack = 4
racks_per_agg = 2
link_speed = "100Mbps"

[trials]
count = 5000
warmup = "5s"

[[hosts]]
name = "pm{i}"
count = 8
cores = 4
memory = "6GiB"
dom0_memory = "4GiB"

[[vms]]
name = "cli{i}"
count = 2
host = "random"
memory = "512MiB"

[[vms]]
name = "web{i}"
count = 2
host = "random"
memory = "512MiB"

[[workloads]]
vm = "cli*"
kind = "web"
web = "web*"

[profiles.random]

[profiles.greedy-fill]
policies = ["greedy-fill"]
"""


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def test_sigterm_stops_trials_in_worker_processes_at_once(tmp_path):
    scenario = tmp_path / "trials.toml"
    scenario.write_text(TRIALS)
    proc = _sova("run", str(scenario), "--out", str(tmp_path / "res"), "--quiet", "--jobs", "2")
    workers = _wait_for(lambda: len(_children(proc.pid)) >= 2 and _children(proc.pid), proc, "the worker processes")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)  # 5,000 trials take minutes: the queued ones are not run
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    assert not [w for w in workers if Path(f"/proc/{w}").exists() and "zombie" not in _state(w)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trials.toml"]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0].lower()
    except (OSError, IndexError):
        return "zombie"


def test_no_trial_worker_outlives_a_killed_run(tmp_path):
    scenario = tmp_path / "trials.toml"
    scenario.write_text(TRIALS)
    proc = _sova("run", str(scenario), "--out", str(tmp_path / "res"), "--quiet", "--jobs", "2")
    workers = _wait_for(lambda: len(_children(proc.pid)) >= 2 and _children(proc.pid), proc, "the worker processes")
    proc.kill()
    proc.communicate()
    _wait_for(lambda: all("zombie" in _state(w) for w in workers), _Alive(), "the workers to end", limit=30)


class _Alive:
    """Stands for a process that is still running, for _wait_for on something that is not a process."""

    def poll(self):
        return None

    def kill(self):
        pass


def test_a_marker_naming_files_outside_its_directory_deletes_nothing_there(small, tmp_path):
    out = tmp_path / "res"
    assert _run(small, out, "--profile", "default") == 0
    outside = tmp_path / "outside.txt"
    outside.write_text("not Sova's")
    marker = json.loads((out / MARKER).read_text())
    marker["files"] += ["../outside.txt", "..", "/etc/passwd"]
    (out / MARKER).write_text(json.dumps(marker))
    assert _run(small, out, "--force", "--profile", "default") == 0
    assert outside.read_text() == "not Sova's"


def test_a_signal_while_results_move_into_place_waits_until_they_are_complete(small, tmp_path, capsys, monkeypatch):
    import sova.report.result_dir as result_dir

    real = result_dir._write_marker

    def marker_then_signal(d, state, files):
        real(d, state, files)
        if state == "complete":
            signal.raise_signal(signal.SIGINT)  # Ctrl-C in the middle of the final moves

    monkeypatch.setattr(result_dir, "_write_marker", marker_then_signal)
    out = tmp_path / "res"
    assert _run(small, out, "--profile", "default") == 130
    assert "the results are complete in" in capsys.readouterr().err
    assert (out / "summary.json").exists() and json.loads((out / MARKER).read_text())["state"] == "complete"
    assert not _staging(tmp_path, "res")
