"""Result directories: made ready before a run, written all at once after it, never over others' files.

A run fills a hidden staging directory and moves it into place at the end, so an interrupted or failed run
leaves nothing half-written. Every directory Sova writes holds a marker, ``.sova-results`` (JSON: the state,
the files Sova wrote, Sova's version, the time), by which Sova recognises its own work:

- a new directory is the staging directory, renamed into place in one step;
- an existing one is written into only if it is empty or holds the marker, and with a marker only when the
  caller forces it; then exactly the files the marker lists are replaced or removed, and files that someone
  else put there stay (a file of theirs with the name of a new result is never overwritten: the results go
  to a fresh sibling directory instead, and the caller is told);
- a directory with anything else in it is refused, whatever the caller forces;
- a staging directory left by a killed run (its process is gone) is removed by the next run into the same
  place.

The staging directory is created before the run starts: that is also the check that the place can be
written at all, so a run never finds out at its end that its results have nowhere to go. Directories are
created with the user's umask. The final moves run with SIGINT and SIGTERM held back, so a signal during them
takes effect once the results are complete.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from sova import __version__
from sova.control import signals

MARKER = ".sova-results"
_STAGING = ".sova-partial-"


class OutputError(Exception):
    """The output directory cannot be written as asked; nothing was changed."""


@dataclass
class ResultDir:
    """A result directory being written: fill `staging`, then `commit()` (or `discard()` on failure)."""

    dest: Path
    staging: Path
    replacing: bool  # dest exists: results are moved into it file by file
    created: list[Path] = field(default_factory=list)  # parent directories made for dest, deepest last
    kept: list[str] = field(default_factory=list)  # after commit: files in dest that Sova did not write
    written_to: Path | None = None  # after commit: where the results are (dest, or a sibling on a name clash)

    def commit(self) -> Path:
        """Move the staged results into place; returns where they are."""
        names = sorted(p.name for p in self.staging.iterdir() if p.name != MARKER)
        with signals.held():
            if not self.replacing:
                _write_marker(self.staging, "complete", names)
                os.rename(self.staging, self.dest)
                self.written_to = self.dest
            else:
                self.written_to = self._move_in(names)
        return self.written_to

    def _move_in(self, names: list[str]) -> Path:
        old = _own_files(read_marker(self.dest))
        present = {p.name for p in self.dest.iterdir() if p.name != MARKER and not p.name.startswith(_STAGING)}
        self.kept = sorted(present - old)
        clash = sorted(set(names) & set(self.kept))
        if clash:
            sibling = _free_sibling(self.dest)
            _write_marker(self.staging, "complete", names)
            os.rename(self.staging, sibling)
            self.kept = clash
            return sibling
        _write_marker(self.dest, "replacing", sorted(old | set(names)))
        for name in sorted(old - set(names)):
            _remove(self.dest / name)
        for name in names:
            target = self.dest / name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            os.replace(self.staging / name, target)
        _write_marker(self.dest, "complete", names)
        (self.staging / MARKER).unlink()
        self.staging.rmdir()
        return self.dest

    def discard(self) -> None:
        """Remove the staging directory and the parents made for it: as if nothing had run."""
        shutil.rmtree(self.staging, ignore_errors=True)
        _remove_created(self.created)


def prepare(dest: Path, force: bool, flag: str = "--out") -> ResultDir:
    """Check that results can go to `dest` and make the staging directory; raises OutputError if not."""
    dest = Path(os.path.abspath(dest))
    if dest.exists() and not dest.is_dir():
        raise OutputError(f"{flag} {dest}: exists and is not a directory; choose a directory")
    if dest.is_dir():
        _remove_stale(dest, _STAGING)
        _check_replaceable(dest, force, flag)
        return ResultDir(dest, _make_staging(dest, _STAGING, flag, dest), replacing=True)
    created = _make_parents(dest.parent, flag, dest)
    _remove_stale(dest.parent, f".{dest.name}{_STAGING}")
    try:
        staging = _make_staging(dest.parent, f".{dest.name}{_STAGING}", flag, dest)
    except OutputError:
        _remove_created(created)
        raise
    return ResultDir(dest, staging, replacing=False, created=created)


def read_marker(d: Path) -> dict:
    """The marker of a directory Sova wrote ({} if it is unreadable)."""
    try:
        doc = json.loads((d / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _check_replaceable(dest: Path, force: bool, flag: str) -> None:
    others = sorted(p.name for p in dest.iterdir() if p.name != MARKER and not p.name.startswith(_STAGING))
    if not (dest / MARKER).exists():
        if others:
            shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
            raise OutputError(
                f"{flag} {dest}: holds files Sova did not write ({shown}); Sova writes only into a new or empty "
                f"directory or replaces one it wrote itself (it has a {MARKER} file), --force or not; "
                "choose another --out"
            )
        return
    if not force:
        when = read_marker(dest).get("written", "an earlier run")
        raise OutputError(
            f"{flag} {dest}: already holds results (written {when}); pass --force to replace them, "
            "or choose another --out"
        )


def _make_parents(parent: Path, flag: str, dest: Path) -> list[Path]:
    missing = []
    d = parent
    while not d.exists() and d != d.parent:
        missing.append(d)
        d = d.parent
    if not d.is_dir():
        raise OutputError(f"{flag} {dest}: {d} is a file, not a directory")
    created: list[Path] = []
    for d in reversed(missing):
        try:
            d.mkdir()
        except OSError as exc:
            _remove_created(created)
            raise OutputError(f"{flag} {dest}: cannot create {d}: {exc.strerror}") from None
        created.append(d)
    return created


def _remove_created(created: list[Path]) -> None:
    """The parent directories this run made, deepest first, each only while it is empty."""
    for d in reversed(created):
        with contextlib.suppress(OSError):
            d.rmdir()


def _own_files(marker: dict) -> set[str]:
    """The files a marker says Sova wrote: plain names in the directory, nothing that points elsewhere."""
    files = marker.get("files", [])
    if not isinstance(files, list):
        return set()
    return {n for n in files if isinstance(n, str) and n not in ("", ".", "..", MARKER) and "/" not in n}


def _make_staging(where: Path, prefix: str, flag: str, dest: Path) -> Path:
    staging = where / f"{prefix}{secrets.token_hex(4)}"
    try:
        staging.mkdir()
        _write_marker(staging, "partial", [])
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise OutputError(f"{flag} {dest}: cannot write in {where}: {exc.strerror or exc}") from None
    return staging


def _remove_stale(where: Path, prefix: str) -> None:
    """Staging directories of runs into this place whose process is gone (killed): Sova's, unfinished.
    One killed before its marker was in place holds nothing but (part of) that marker."""
    with contextlib.suppress(OSError):
        for d in where.iterdir():
            if not d.name.startswith(prefix) or not d.is_dir() or d.is_symlink():
                continue
            marker = read_marker(d)
            if marker.get("state") == "partial" and not _alive(marker.get("pid")):
                shutil.rmtree(d, ignore_errors=True)
            elif not marker and all(_unborn_marker(p) for p in d.iterdir()):
                for p in d.iterdir():
                    p.unlink()
                d.rmdir()


def _unborn_marker(path: Path) -> bool:
    """A marker being written (MARKER.PID.tmp) by a process that is gone."""
    name, _, rest = path.name.partition(".tmp")
    pid = name.removeprefix(f"{MARKER}.")
    return path.name.startswith(f"{MARKER}.") and rest == "" and pid.isdigit() and not _alive(int(pid))


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _write_marker(d: Path, state: str, files: list[str]) -> None:
    doc = {
        "state": state,
        "files": files,
        "pid": os.getpid(),
        "sova_version": __version__,
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    tmp = d / f"{MARKER}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, d / MARKER)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _free_sibling(dest: Path) -> Path:
    n = 2
    while Path(f"{dest}-{n}").exists():
        n += 1
    return Path(f"{dest}-{n}")
