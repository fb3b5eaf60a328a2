"""Simulation runs submitted through the API: each a `sova run` process of its own (so it never slows the
manager's loop), in a directory of its own under the manager's runs directory, which is also the record:

    RUNS/ID/scenario.toml    the scenario as submitted
    RUNS/ID/run.json         who submitted it, when, its profiles; its state once it ended
    RUNS/ID/progress.json    `sova run --progress-file`: simulated seconds done of all
    RUNS/ID/results/         what `sova run` writes (summary.json, report.html, ...)
    RUNS/ID/run.log          its output

At most `parallel` run at once; the others wait their turn (queued). A scenario is checked when it is
submitted, so a bad one is refused with its problems and nothing is queued. A run still going when the
manager stops is stopped too, and shows as failed after a restart.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from sova.model.schema import InputError, Problem

MAX_SCENARIO_BYTES = 1 << 20


class RunError(ValueError):
    """A submission that cannot be run: the problems, each with its location."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass
class RunBook:
    directory: Path
    parallel: int = 1
    traces: Path | None = None  # where a submitted scenario may read traces from (besides its own folder)
    running: dict[str, subprocess.Popen] = field(default_factory=dict)

    def submit(self, scenario: str, profiles: list[str], by: str) -> dict:
        """Check and queue a scenario (TOML text); its record. Safe to call off the event loop: it only
        writes a new folder of its own (poll() starts the run)."""
        if len(scenario.encode()) > MAX_SCENARIO_BYTES:
            raise RunError([f"scenario: larger than {MAX_SCENARIO_BYTES} bytes"])
        _check_trace_paths(scenario, self.traces)
        run_id = time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
        folder = self.directory / run_id
        folder.mkdir(parents=True)
        (folder / "scenario.toml").write_text(scenario, encoding="utf-8")
        try:
            name = _check(folder / "scenario.toml", profiles)
        except RunError:
            for path in folder.iterdir():  # only what this submission just wrote
                path.unlink()
            folder.rmdir()
            raise
        record = {"id": run_id, "scenario": name, "profiles": profiles, "by": by, "submitted": time.time()}
        _write_json(folder / "run.json", record | {"state": "queued"})
        return self.get(run_id)

    def poll(self) -> None:
        """Note the runs that ended, and start queued ones while there is room."""
        for run_id, process in list(self.running.items()):
            code = process.poll()
            if code is not None:
                del self.running[run_id]
                self._end(run_id, code)
        for record in sorted(self._records(), key=lambda r: r["submitted"]):
            if len(self.running) >= self.parallel:
                break
            if record["state"] == "queued":
                self._start(record)

    def _start(self, record: dict) -> None:
        folder = self.directory / record["id"]
        command = [sys.executable, "-m", "sova.cli", "run", str(folder / "scenario.toml"), "--quiet"]
        command += ["--out", str(folder / "results"), "--progress-file", str(folder / "progress.json")]
        for profile in record["profiles"]:
            command += ["--profile", profile]
        with (folder / "run.log").open("ab") as log:
            self.running[record["id"]] = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        _write_json(folder / "run.json", record | {"state": "running", "started": time.time()})

    def _end(self, run_id: str, code: int) -> None:
        folder = self.directory / run_id
        record = json.loads((folder / "run.json").read_text())
        state = "done" if code == 0 and (folder / "results" / "summary.json").exists() else "failed"
        error = "" if state == "done" else _tail(folder / "run.log")
        _write_json(folder / "run.json", record | {"state": state, "ended": time.time(), "error": error})

    def get(self, run_id: str) -> dict | None:
        path = self.directory / run_id / "run.json"
        if not _is_id(run_id) or not path.exists():
            return None
        record = json.loads(path.read_text())
        if record["state"] == "running" and run_id not in self.running:  # a manager before this one ran it
            record |= {"state": "failed", "error": "the manager stopped while it ran"}
        progress = self.directory / run_id / "progress.json"
        record["progress"] = json.loads(progress.read_text()) if progress.exists() else None
        record["report"] = (self.directory / run_id / "results" / "report.html").exists()
        return record

    def list(self) -> list[dict]:
        return sorted((self.get(r["id"]) for r in self._records()), key=lambda r: -r["submitted"])

    def result(self, run_id: str, name: str) -> Path | None:
        """A file of a finished run's results (report.html, summary.json, a plot), or None."""
        if not _is_id(run_id) or "/" in name or name.startswith("."):
            return None
        path = self.directory / run_id / "results" / name
        return path if path.is_file() else None

    def stop(self) -> None:
        for process in self.running.values():
            os.killpg(process.pid, signal.SIGTERM)  # `sova run` leaves nothing half-written
        for process in self.running.values():
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)

    def _records(self) -> list[dict]:
        if not self.directory.exists():
            return []
        found = []
        for path in self.directory.glob("*/run.json"):
            try:
                found.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                continue  # being written, or not one of ours
        return found


def _check(path: Path, profiles: list[str]) -> str:
    """The scenario's name, or a RunError listing its problems (as `sova validate` would)."""
    from sova.control.profiles import check_profile
    from sova.model.sweep import load_runs
    from sova.sim.traces import TraceError

    try:
        _, runs = load_runs(path, profile_check=check_profile)
    except InputError as exc:
        raise RunError([str(p).replace(str(path), "scenario") for p in exc.problems]) from None
    except TraceError as exc:
        raise RunError([str(exc).replace(str(path.parent), ".")]) from None
    unknown = [Problem(f"profiles: {p}", "no such profile") for p in profiles if p not in runs[0].profiles]
    if unknown:
        raise RunError([str(p) for p in unknown])
    return runs[0].name


def _check_trace_paths(scenario: str, traces: Path | None) -> None:
    """Refuse a trace file outside the run's own folder and the traces directory, before the scenario is
    read: reading it would tell whether any file on the manager's machine exists, and what it holds."""
    import tomllib

    try:
        raw = tomllib.loads(scenario)
    except tomllib.TOMLDecodeError as err:
        raise RunError([f"scenario: not TOML ({err})"]) from None
    entries = raw.get("workloads", [])
    for n, entry in enumerate(entries if isinstance(entries, list) else [], start=1):
        value = entry.get("file") if isinstance(entry, dict) else None
        if not isinstance(value, str):
            continue
        path = Path(value.partition(".tar.gz:")[0])
        inside = not path.is_absolute() and ".." not in path.parts
        if path.is_absolute() and traces is not None:
            inside = path.resolve().is_relative_to(traces.resolve())
        if not inside:
            where = f"under {traces}" if traces is not None else "(the manager was given no --run-traces directory)"
            raise RunError([f"scenario: [[workloads]] #{n}.file: {value!r} is not a trace {where}"])


def _is_id(run_id: str) -> bool:
    return len(run_id) < 64 and run_id.replace("-", "").isalnum()


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return ""


def _write_json(path: Path, record: dict) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(record, indent=2))
    partial.replace(path)
