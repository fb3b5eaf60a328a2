"""Trace sets: a directory of trace files, or a whole .tar.gz archive of them, listed in name order.

A scenario gives one VM per file of a set (``[[vms]] files``) and a workload one file per VM of its
entry; both take the files sorted by name, so the k-th VM gets the k-th file.
"""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

from sova.model.schema import Reader


class TraceError(ValueError):
    """A trace file is missing or malformed; the message names the file and line."""


def is_trace_set(spec: str) -> bool:
    """A directory of trace files, or a whole .tar.gz archive (no ':MEMBER')."""
    return Path(spec).is_dir() or (spec.endswith(".tar.gz") and ".tar.gz:" not in spec)


def trace_set(spec: str) -> list[str]:
    """The traces of a set, sorted by name: a directory's files, or an archive's files as
    'ARCHIVE.tar.gz:MEMBER' (listing an archive reads it once)."""
    path = Path(spec)
    try:
        if path.is_dir():
            return sorted(str(p) for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        with tarfile.open(spec, "r:gz") as tar:  # hidden files (macOS ._*, .DS_Store) are no traces, as in a directory
            return sorted(f"{spec}:{m.name}" for m in tar.getmembers() if m.isfile() and not _hidden(m.name))
    except (OSError, tarfile.TarError) as exc:
        raise TraceError(f"{spec}: cannot list the trace set ({exc})") from None


def _hidden(member: str) -> bool:
    return any(part.startswith(".") and part not in (".", "..") for part in member.split("/"))


def vms_per_file(r: Reader, raw: Any, base_dir: Path) -> Any:
    """[[vms]] entries with ``files``: one VM per file of the set, ``count`` and ``start`` taken from it;
    ``block = "K/N"`` keeps the K-th of N contiguous blocks of ceil(files / N) files (CloudSim's
    PlanetLab study gives VM i the type i / ceil(N / 4)). The names' {i} is the file's place (1-based)."""
    if not isinstance(raw, list):
        return raw
    out = []
    for n, entry in enumerate(raw, start=1):
        if not isinstance(entry, dict) or "files" not in entry:
            out.append(entry)
            continue
        where = f"[[vms]] #{n}" + (f" ({entry['name']})" if isinstance(entry.get("name"), str) else "")
        for key in ("count", "start"):
            if key in entry:
                r.error(f"{where}.{key}", "is set by files (one VM per file); remove it")
        listed = _listed(r, entry["files"], base_dir, f"{where}.files")
        block = _block(r, entry.get("block", "1/1"), f"{where}.block")
        if listed is None or block is None:
            out.append({k: v for k, v in entry.items() if k not in ("files", "block")})
            continue
        (part, parts), total = block, len(listed[1])
        size = -(-total // parts)
        first = min((part - 1) * size, total)
        out.append({**entry, "files": listed[0], "count": min(size, total - first), "start": first + 1})
    return out


def _listed(r: Reader, value: Any, base_dir: Path, where: str) -> tuple[str, list[str]] | None:
    if not isinstance(value, str) or not value:
        r.error(where, f"expected a directory or .tar.gz of trace files, got {value!r}")
        return None
    path = Path(value) if Path(value).is_absolute() else (base_dir / value).resolve()
    if not is_trace_set(str(path)):
        r.error(where, f"{str(path)!r} is no directory or .tar.gz of trace files")
        return None
    try:
        return str(path), trace_set(str(path))
    except TraceError as exc:
        r.error(where, str(exc))
        return None


def _block(r: Reader, value: Any, where: str) -> tuple[int, int] | None:
    part, slash, parts = str(value).partition("/")
    if isinstance(value, str) and slash and part.isdigit() and parts.isdigit() and 1 <= int(part) <= int(parts):
        return int(part), int(parts)
    r.error(where, f"expected 'K/N' with 1 <= K <= N (the K-th of N blocks of the files), got {value!r}")
    return None
