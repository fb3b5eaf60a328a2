"""Result directories: nothing of a user's is ever deleted, a place that cannot be written fails before the run,
a signal or a crash leaves nothing half-written, and the main job (`make run`) runs again and again."""

import contextlib
import errno
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import ROOT
from sova.cli import main
from sova.report.result_dir import MARKER


def _run(small: Path, out: Path, *extra: str) -> int:
    return main(["run", str(small), "--out", str(out), "--quiet", *extra])


def _no_run(monkeypatch) -> None:
    """Fail the test if a simulation starts: the check must come before the run."""
    import sova.experiments.scenario_runs as experiment

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
    assert marker["state"] == "complete" and "audit-threshold.jsonl" in marker["files"]
    assert _run(small, out) == 2
    assert "pass --force" in capsys.readouterr().err
    (out / "my-notes.txt").write_text("keep me")
    assert _run(small, out, "--force", "--profile", "default") == 0
    assert "kept 1 file(s)" in capsys.readouterr().err
    assert (out / "my-notes.txt").read_text() == "keep me"
    assert not (out / "audit-threshold.jsonl").exists()  # Sova's own, from the first run: gone
    assert not (out / "audit-default.jsonl").exists()  # no action, no audit file (not an empty one)
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
        raise OSError(errno.ENOSPC, "No space left on device")  # nothing can be written: nothing is kept

    monkeypatch.setattr(writer, "make_plots", broken)
    assert _run(small, tmp_path / "a" / "b" / "res") == 1
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


def test_sigterm_while_results_are_written_leaves_nothing(small, tmp_path, capsys, monkeypatch):
    import sova.report.writer as writer

    real = writer.make_plots

    def plots_then_sigterm(*args, **kwargs):  # summary.json and the CSVs are written, the plots too
        real(*args, **kwargs)
        signal.raise_signal(signal.SIGTERM)

    monkeypatch.setattr(writer, "make_plots", plots_then_sigterm)
    assert _run(small, tmp_path / "res") == 128 + signal.SIGTERM
    err = capsys.readouterr().err
    assert "terminated; nothing was written" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"]


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
    busy = tmp_path / ".res.sova-partial-0000"  # a live run holds its staging directory's flock
    busy.mkdir()
    (busy / MARKER).write_text(json.dumps({"state": "partial", "pid": os.getpid()}))
    held = os.open(busy, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(held, fcntl.LOCK_EX)
    theirs = tmp_path / ".res.sova-partial-1111"  # the name, but not Sova's content: not Sova's to remove
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    starting = tmp_path / ".res.sova-partial-3333"  # a run that has just made it and not yet taken the lock
    starting.mkdir()
    unborn = tmp_path / ".res.sova-partial-2222"  # killed between making the directory and its marker
    unborn.mkdir()
    (unborn / f"{MARKER}.123.tmp").write_text("{")
    os.utime(unborn, (time.time() - 3600, time.time() - 3600))
    try:
        assert _run(small, tmp_path / "res", "--profile", "default") == 0
    finally:
        os.close(held)
    assert busy.exists() and (theirs / "notes.txt").exists() and starting.exists() and not unborn.exists()


def test_the_main_job_runs_again_and_again(tmp_path, capsys, monkeypatch):
    run_line = next(x for x in (ROOT / "Makefile").read_text().splitlines() if "sova run" in x)
    argv = run_line.split("sova ", 1)[1].split()
    assert argv[:2] == ["run", "scenarios/quickstart.toml"] and "--force" in argv
    monkeypatch.chdir(ROOT)
    out = tmp_path / "quickstart"
    argv[argv.index("--out") + 1] = str(out)
    for _ in range(2):
        assert main([*argv, "--quiet"]) == 0, capsys.readouterr().err
    assert (out / "report.html").exists() and json.loads((out / MARKER).read_text())["state"] == "complete"


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
    """The processes whose parent is `pid` (from /proc/*/stat, which every kernel has)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended meanwhile
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_sigterm_stops_trials_in_worker_processes_at_once(tmp_path):
    scenario = tmp_path / "trials.toml"
    scenario.write_text(TRIALS)
    proc = _sova("run", str(scenario), "--out", str(tmp_path / "res"), "--quiet", "--jobs", "2")
    try:
        workers = _wait_for(lambda: len(_children(proc.pid)) >= 2 and _children(proc.pid), proc, "the workers")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)  # 5,000 trials take minutes: the queued ones are not run
    finally:  # a run that did not stop must not outlive the test (its trials would run on for an hour)
        if proc.poll() is None:
            for pid in _children(proc.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            proc.kill()
            proc.communicate()
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
    # as an interactive shell gives it (a shell's background job, `make test &`, starts with SIGINT ignored)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    out = tmp_path / "res"
    try:
        assert _run(small, out, "--profile", "default") == 130
    finally:
        signal.signal(signal.SIGINT, before)
    assert "the results are complete in" in capsys.readouterr().err
    assert (out / "summary.json").exists() and json.loads((out / MARKER).read_text())["state"] == "complete"
    assert not _staging(tmp_path, "res")


def test_a_dangling_symbolic_link_as_out_is_refused_before_the_run(small, tmp_path, capsys, monkeypatch):
    link = tmp_path / "res"
    link.symlink_to(tmp_path / "nowhere")
    _no_run(monkeypatch)
    assert _run(small, link) == 2
    assert "which does not exist" in capsys.readouterr().err
    assert link.is_symlink() and not (tmp_path / "nowhere").exists()


def test_a_symbolic_link_to_a_directory_as_out_fills_that_directory(small, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "res").symlink_to(real)
    assert _run(small, tmp_path / "res", "--profile", "default") == 0
    assert (tmp_path / "res").is_symlink() and (real / "summary.json").exists()


def test_out_root_is_refused(small, capsys, monkeypatch):
    _no_run(monkeypatch)
    assert _run(small, Path("/"), "--force") == 2
    assert "did not write" in capsys.readouterr().err


def test_a_directory_that_appears_during_the_run_is_left_alone(small, tmp_path, capsys, monkeypatch):
    import sova.report.writer as writer

    out = tmp_path / "res"
    real = writer.write_results

    def another_run_wins(*args, **kwargs):  # another run (or the user) makes --out while this one runs
        real(*args, **kwargs)
        out.mkdir()
        (out / "theirs.txt").write_text("theirs")

    monkeypatch.setattr(writer, "write_results", another_run_wins)
    assert _run(small, out, "--profile", "default") == 0
    assert "appeared while this run ran" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["theirs.txt"]
    assert (tmp_path / "res-2" / "summary.json").exists()


def test_a_replacement_that_fails_half_way_puts_the_old_results_back(small, tmp_path, capsys, monkeypatch):
    out = tmp_path / "res"
    assert _run(small, out, "--profile", "default") == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = os.rename

    def disk_error_on_summary(src, dst, *args, **kwargs):
        staged = Path(src).parent.name.startswith(".sova-partial-") and "-old-" not in Path(src).parent.name
        if Path(dst) == out / "summary.json" and staged:
            raise OSError(5, "Input/output error")
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "rename", disk_error_on_summary)
    assert _run(small, out, "--force") == 1
    err = capsys.readouterr().err
    assert "Input/output error" in err and f"they are complete in {tmp_path / 'res-2'}" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert json.loads((tmp_path / "res-2" / "summary.json").read_text())["profiles"].keys() == {"default", "threshold"}


def test_marker_entries_that_are_not_plain_files_of_sova_are_kept(small, tmp_path):
    out = tmp_path / "res"
    assert _run(small, out, "--profile", "default") == 0
    (out / "subdir").mkdir()
    (out / "subdir" / "data.txt").write_text("mine")
    marker = json.loads((out / MARKER).read_text())
    marker["files"] += ["subdir", "a\0b", ".sova-partial-x", MARKER]
    (out / MARKER).write_text(json.dumps(marker))
    assert _run(small, out, "--force", "--profile", "default") == 0
    assert (out / "subdir" / "data.txt").read_text() == "mine"


def test_results_of_a_sova_from_before_the_marker_are_replaced_with_force(small, tmp_path, capsys):
    out = tmp_path / "res"
    out.mkdir()
    (out / "summary.json").write_text(json.dumps({"sova_version": "0.1.0"}))
    (out / "metrics-old.csv").write_text("t\n")
    assert _run(small, out, "--profile", "default") == 2
    assert "written by an earlier Sova" in capsys.readouterr().err
    assert _run(small, out, "--force", "--profile", "default") == 0
    assert not (out / "metrics-old.csv").exists() and (out / MARKER).exists()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "summary.json").write_text(json.dumps({"sova_version": "0.1.0"}))
    (tmp_path / "other" / "thesis.txt").write_text("mine")
    assert _run(small, tmp_path / "other", "--force") == 2
    assert (tmp_path / "other" / "thesis.txt").exists()


def test_results_stay_complete_and_visible_when_the_old_files_cannot_be_moved_aside(
    small, tmp_path, capsys, monkeypatch
):
    import sova.report.result_dir as result_dir

    out = tmp_path / "res"
    assert _run(small, out, "--profile", "default") == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = result_dir._make_staging

    def no_room_for_the_aside(where, prefix, flag, dest):
        if prefix == result_dir._ASIDE:
            raise result_dir.OutputError(f"{flag} {dest}: cannot write in {where}: No space left on device")
        return real(where, prefix, flag, dest)

    monkeypatch.setattr(result_dir, "_make_staging", no_room_for_the_aside)
    assert _run(small, out, "--force") == 1
    assert f"they are complete in {tmp_path / 'res-2'}" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert (tmp_path / "res-2" / "summary.json").exists()


def test_old_results_left_aside_by_a_killed_replacement_are_put_back(small, tmp_path, capsys):
    out = tmp_path / "res"
    assert _run(small, out, "--profile", "default") == 0
    aside = out / ".sova-old-deadbeef"  # as a run killed (SIGKILL) between moving old files out and new in
    aside.mkdir()
    for name in ("summary.json", "report.html"):
        (out / name).rename(aside / name)
    (aside / MARKER).write_text("{}")
    marker = json.loads((out / MARKER).read_text())
    (out / MARKER).write_text(json.dumps({**marker, "state": "replacing"}))
    assert _run(small, out) == 2
    assert "stopped while replacing" in capsys.readouterr().err
    assert (out / "summary.json").exists() and (out / "report.html").exists() and not aside.exists()


def test_a_process_forked_while_signals_are_held_ends_on_sigterm_instead_of_holding_it():
    """A pool's worker forked inside held() has the holding handler until its initializer runs: a
    terminate() then must end it, not leave the pool waiting for it for ever."""
    from sova.experiments import signals

    read_end, write_end = os.pipe()
    with signals.held():
        child = os.fork()
        if child == 0:  # the child: say it is up, then wait as a worker before its initializer would
            os.write(write_end, b"up")
            time.sleep(60)
            os._exit(0)
    os.close(write_end)
    try:
        assert os.read(read_end, 2) == b"up"
        os.kill(child, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while (done := os.waitpid(child, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert done[0] == child and os.WIFSIGNALED(done[1]) and os.WTERMSIG(done[1]) == signal.SIGTERM
    finally:
        os.close(read_end)
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
