"""Result directories: made ready before a run, written all at once after it, never over others' files.

A run fills a hidden staging directory and moves it into place at the end, so an interrupted or failed run
leaves nothing half-written. Every directory Sova writes holds a marker, ``.sova-results`` (JSON: the state,
the files Sova wrote, Sova's version, the host and process, the time), by which Sova recognises its own work:

- a new directory is the staging directory, renamed into place in one step;
- an existing one is written into only if it is empty or holds the marker, and with a marker only when the
  caller forces it; then exactly the files the marker lists are replaced, all or none (the old ones are moved
  aside first and moved back if anything fails), and files that someone else put there stay (a file of theirs
  with the name of a new result is never overwritten: the results go to a fresh sibling directory instead);
- a directory with anything else in it is refused, whatever the caller forces.

The staging directory is created before the run starts: that is also the check that the place can be
written at all, so a run never finds out at its end that its results have nowhere to go. A run holds an
flock on its staging directory for its whole life, so a staging directory nobody holds was left by a killed
run and the next run into the same place removes it. Moving results in takes an flock on the directory
they go into, so two runs into one place never mix their files: the second one's go to a sibling. The moves
run with SIGINT and SIGTERM held back. If they fail all the same, the complete results stay in a visible
sibling directory and the error says where. Directories are created with the user's umask.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import socket
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sova import __version__
from sova.experiments import signals

MARKER = ".sova-results"
_STAGING = ".sova-partial-"
_ASIDE = ".sova-old-"  # inside a directory being replaced: its old files, until the new ones are in
_STARTING = 60.0  # s: an unheld staging directory without its marker yet, younger than this, may be starting
_LOCK_WAIT = 60.0  # s: how long a commit waits for another run's commit into the same place
_LEGACY_SUFFIXES = (".png", ".csv", ".jsonl", ".html", ".json")  # what Sova wrote before it wrote a marker


class OutputError(Exception):
    """The output directory cannot be written as asked; nothing was changed."""


class CommitError(OutputError):
    """The results are complete but could not be moved into place: they are at `kept_at`."""

    def __init__(self, message: str, kept_at: Path) -> None:
        super().__init__(message)
        self.kept_at = kept_at


@dataclass
class ResultDir:
    """A result directory being written: fill `staging`, then `commit()` (or `discard()` on failure)."""

    dest: Path
    staging: Path
    lock: int  # fd of `staging`, flock-ed while this run lives
    replacing: bool  # dest exists: results are moved into it file by file
    created: list[Path] = field(default_factory=list)  # parent directories made for dest, deepest last
    written_to: Path | None = None  # after commit: where the results are (dest, or a sibling)
    note: str = ""  # after commit: what the user should know about where they went

    def commit(self) -> Path:
        """Move the staged results into place; returns where they are. Raises CommitError if they could not."""
        names = sorted(p.name for p in self.staging.iterdir() if p.name != MARKER)
        with signals.held():
            try:
                with _locked(self.dest if self.replacing else self.dest.parent):
                    self.written_to = self._move_in(names) if self.replacing else self._rename_in(names)
            except (OSError, OutputError) as exc:  # OutputError: the aside directory could not be made
                kept_at = self._keep_visible(names)
                why = getattr(exc, "strerror", None) or exc
                raise CommitError(
                    f"cannot move the results into {self.dest}: {why}; they are complete in {kept_at}",
                    kept_at,
                ) from None
            finally:
                self._release()
        return self.written_to

    def empty(self) -> None:
        """Remove what was written to the staging directory so far (a writer that failed half-way), so that it
        can be filled again."""
        for written in self.staging.iterdir():
            if written.name != MARKER:
                shutil.rmtree(written) if written.is_dir() else written.unlink()

    def discard(self) -> None:
        """Remove the staging directory and the parents made for it: as if nothing had run."""
        with signals.held():
            shutil.rmtree(self.staging, ignore_errors=True)
            self._release()
            _remove_created(self.created)

    def _release(self) -> None:
        if self.lock >= 0:
            os.close(self.lock)
            self.lock = -1

    def _rename_in(self, names: list[str]) -> Path:
        _write_marker(self.staging, "complete", names)
        if os.path.lexists(self.dest):
            return self._to_sibling(f"{self.dest} appeared while this run ran (another run?)")
        os.rename(self.staging, self.dest)
        return self.dest

    def _move_in(self, names: list[str]) -> Path:
        old = _own_files(self.dest)
        present = {n for n in os.listdir(self.dest) if n != MARKER and not n.startswith((_STAGING, _ASIDE))}
        kept = sorted(present - old)
        clash = sorted(set(names) & set(kept))
        if clash:
            _write_marker(self.staging, "complete", names)
            return self._to_sibling(
                f"{self.dest} holds files of someone else with the names of these results ({', '.join(clash)})"
            )
        _replace_files(self.dest, self.staging, sorted(old), names)
        with contextlib.suppress(OSError):  # the results are in; an empty staging directory is no failure
            (self.staging / MARKER).unlink()
            self.staging.rmdir()
        if kept:
            self.note = f"kept {len(kept)} file(s) in {self.dest} that Sova did not write"
        return self.dest

    def _to_sibling(self, why: str) -> Path:
        sibling = _free_sibling(self.dest)
        os.rename(self.staging, sibling)
        self.note = f"{why}; the results went to {sibling} instead"
        return sibling

    def _keep_visible(self, names: list[str]) -> Path:
        """After a failed commit: the complete results under a name the user sees, else where they are."""
        try:
            _write_marker(self.staging, "complete", names)
            sibling = _free_sibling(self.dest)
            os.rename(self.staging, sibling)
        except OSError:
            return self.staging
        return sibling


def prepare(dest: Path, force: bool, flag: str = "--out") -> ResultDir:
    """Check that results can go to `dest` and make the staging directory; raises OutputError if not."""
    if os.path.islink(dest) and not os.path.exists(dest):
        raise OutputError(f"{flag} {dest}: is a symbolic link to {os.readlink(dest)}, which does not exist")
    dest = Path(os.path.realpath(dest))
    if dest.exists() and not dest.is_dir():
        raise OutputError(f"{flag} {dest}: exists and is not a directory; choose a directory")
    if dest.is_dir():
        _restore_aside(dest)
        _check_replaceable(dest, force, flag)
        _remove_stale(dest, _STAGING)
        staging, lock = _make_staging(dest, _STAGING, flag, dest)
        return ResultDir(dest, staging, lock, replacing=True)
    created = _make_parents(dest.parent, flag, dest)
    _remove_stale(dest.parent, f".{dest.name}{_STAGING}")
    try:
        staging, lock = _make_staging(dest.parent, f".{dest.name}{_STAGING}", flag, dest)
    except OutputError:
        _remove_created(created)
        raise
    return ResultDir(dest, staging, lock, replacing=False, created=created)


def read_marker(d: Path) -> dict:
    """The marker of a directory Sova wrote ({} if it has none or it is unreadable)."""
    try:
        doc = json.loads((d / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _check_replaceable(dest: Path, force: bool, flag: str) -> None:
    others = sorted(n for n in os.listdir(dest) if n != MARKER and not n.startswith((_STAGING, _ASIDE)))
    marker = read_marker(dest)
    if not marker and others and not _legacy(dest, others):
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise OutputError(
            f"{flag} {dest}: holds files Sova did not write ({shown}); Sova writes only into a new or empty "
            f"directory or replaces one it wrote itself (it has a {MARKER} file), --force or not; "
            "choose another --out"
        )
    state = marker.get("state", "complete") if marker else "complete"
    if (others or state != "complete") and not force:
        when = marker.get("written", "by an earlier Sova") if marker else "by an earlier Sova"
        stopped = "; a run was stopped while replacing them, so some may be older" if state != "complete" else ""
        raise OutputError(
            f"{flag} {dest}: already holds results (written {when}{stopped}); pass --force to replace them, "
            "or choose another --out"
        )


def _restore_aside(dest: Path) -> None:
    """A run killed while it replaced results left the old ones aside: put back those whose place is free
    (the new ones that made it in stay), and remove the aside directory once it is empty. One a live run
    holds is left alone."""
    for aside in _unheld(dest, _ASIDE):
        with contextlib.suppress(OSError):
            for name in os.listdir(aside):
                if name != MARKER and not os.path.lexists(dest / name):
                    os.rename(aside / name, dest / name)
            (aside / MARKER).unlink(missing_ok=True)
            aside.rmdir()  # fails, and keeps them, if some old files could not go back


def _legacy(dest: Path, names: list[str]) -> bool:
    """Results of a Sova from before the marker: its summary.json says so, and nothing else is there."""
    try:
        doc = json.loads((dest / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    plain = all(n.endswith(_LEGACY_SUFFIXES) and stat.S_ISREG(os.lstat(dest / n).st_mode) for n in names)
    return isinstance(doc, dict) and "sova_version" in doc and plain


def _own_files(dest: Path) -> set[str]:
    """The files Sova wrote in `dest`: what its marker lists (or all of a legacy directory), as long as each
    is still a plain name there and a file or a link (a directory by that name is someone else's)."""
    marker = read_marker(dest)
    if marker:
        listed = marker.get("files", [])
        names = [n for n in listed if isinstance(n, str)] if isinstance(listed, list) else []
    else:
        names = [n for n in os.listdir(dest) if not n.startswith(".")]
        if not _legacy(dest, names):
            return set()
    own = set()
    for name in names:
        if name in ("", ".", "..") or "/" in name or "\0" in name or name.startswith((MARKER, _STAGING, _ASIDE)):
            continue
        with contextlib.suppress(OSError):
            mode = os.lstat(dest / name).st_mode
            if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
                own.add(name)
    return own


def _replace_files(dest: Path, staging: Path, old: list[str], new: list[str]) -> None:
    """Sova's old files in `dest` out, the new ones in: all or nothing (an OSError puts everything back)."""
    aside, lock = _make_staging(dest, _ASIDE, "--out", dest)
    before = read_marker(dest)
    moved_old: list[str] = []
    moved_new: list[str] = []
    try:
        _write_marker(dest, "replacing", sorted(set(old) | set(new)))
        for name in old:
            os.rename(dest / name, aside / name)
            moved_old.append(name)
        for name in new:
            os.rename(staging / name, dest / name)
            moved_new.append(name)
        _write_marker(dest, "complete", new)
    except OSError:
        _move_back(dest, staging, aside, moved_old, moved_new, before)
        raise
    else:
        shutil.rmtree(aside, ignore_errors=True)
    finally:
        os.close(lock)


def _move_back(dest: Path, staging: Path, aside: Path, old: list[str], new: list[str], marker: dict) -> None:
    """Undo a replacement that failed half-way: new files back to staging, old ones and the marker back."""
    for name in reversed(new):
        with contextlib.suppress(OSError):
            os.rename(dest / name, staging / name)
    for name in reversed(old):
        with contextlib.suppress(OSError):
            os.rename(aside / name, dest / name)
    with contextlib.suppress(OSError):
        if marker:
            _put_marker(dest, marker)
        else:
            (dest / MARKER).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        (aside / MARKER).unlink()  # without it, old files that could not go back are never taken for stale
        aside.rmdir()


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
        except FileExistsError:
            if d.is_dir():  # made by someone else meanwhile: theirs, not ours to remove
                continue
            _remove_created(created)
            raise OutputError(f"{flag} {dest}: {d} is a file, not a directory") from None
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


def _make_staging(where: Path, prefix: str, flag: str, dest: Path) -> tuple[Path, int]:
    """A new staging directory, held (flock) by this process, with its marker: (path, fd of the lock)."""
    staging = where / f"{prefix}{secrets.token_hex(4)}"
    try:
        staging.mkdir()
    except OSError as exc:
        raise OutputError(f"{flag} {dest}: cannot write in {where}: {exc.strerror or exc}") from None
    lock = os.open(staging, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # at most a moment: another run's check for stale directories
        _write_marker(staging, "partial", [])
    except OSError as exc:
        os.close(lock)
        shutil.rmtree(staging, ignore_errors=True)
        raise OutputError(f"{flag} {dest}: cannot write in {where}: {exc.strerror or exc}") from None
    return staging, lock


def _remove_stale(where: Path, prefix: str) -> None:
    """Staging directories of runs into this place that nobody holds: left by a killed run (Sova's names)."""
    for d in _unheld(where, prefix):
        with contextlib.suppress(OSError):
            entries = os.listdir(d)
            # without its marker it is Sova's only if it holds nothing but (part of) a marker, and not
            # starting only if it is not new
            unborn = all(n.startswith(MARKER) for n in entries) and time.time() - d.stat().st_mtime > _STARTING
            if MARKER in entries or unborn:
                shutil.rmtree(d)


def _unheld(where: Path, prefix: str) -> Iterator[Path]:
    """The directories named prefix* in `where` that no live run holds (flock), each held while the caller
    handles it."""
    try:
        found = [d for d in where.iterdir() if d.name.startswith(prefix) and d.is_dir() and not d.is_symlink()]
    except OSError:
        return
    for d in found:
        try:
            fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # its run is alive
            os.close(fd)
            continue
        try:
            yield d
        finally:
            os.close(fd)


@contextlib.contextmanager
def _locked(d: Path) -> Iterator[None]:
    """An exclusive flock on directory `d` while moving results in; waits for another run's moves."""
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        deadline = time.monotonic() + _LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another run has been writing into {d} for {_LOCK_WAIT:g} s") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def _write_marker(d: Path, state: str, files: list[str]) -> None:
    _put_marker(
        d,
        {
            "state": state,
            "files": files,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "sova_version": __version__,
            "written": time.strftime("%Y-%m-%d %H:%M:%S"),
        },
    )


def _put_marker(d: Path, doc: dict) -> None:
    tmp = d / f"{MARKER}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, d / MARKER)


def _free_sibling(dest: Path) -> Path:
    n = 2
    while os.path.lexists(f"{dest}-{n}"):
        n += 1
    return Path(f"{dest}-{n}")
