"""Trace sets: a directory of trace files, or a whole .tar.gz archive of them, listed in name order.

A scenario gives one VM per file of a set (``[[vms]] files``) and a workload one file per VM of its
entry; both take the files sorted by name, so the k-th VM gets the k-th file. A workload with ``order =
"listing"`` takes them in the order the file system lists the directory (an archive: its members'
order), as CloudSim's PlanetLab runner does (Java's ``File.listFiles``: readdir's order, which differs
from one file system to another); the VMs' files only count and block them, so their order is moot.

Public trace sets are too large for the project: scenarios read them from beside the checkout
(``../shared/traces``) through a ``[params]`` path that ``--param NAME=PATH`` points elsewhere. A trace
path with nothing at it is an ``AbsentTraces`` problem, which ``sova validate`` tells apart from the
others, naming where the public set comes from; a path that is there but holds no trace set is an
ordinary problem. A [[vms]] entry whose set cannot be listed stands as one VM, so that the rest of the
scenario is still read (without duplicate names from the entries of one set's blocks).
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path
from typing import Any

from sova.model.schema import AbsentTraces, Reader

# Where the public trace sets that shipped scenarios and the tests read come from, by a folder name in their
# path (the names of ../shared/traces; each folder's PROVENANCE.md or README.md there)
PUBLIC_TRACES = {
    "planetlab": "PlanetLab per-VM CPU of March-April 2011, one folder per day (Beloglazov & Buyya, CCPE 2012), "
    "as CloudSim ships them: github.com/Cloudslab/cloudsim, "
    "modules/cloudsim-examples/src/main/resources/workload/planetlab (also github.com/beloglazov/"
    "planetlab-workload-traces)",
    "gwa_t12_rnd": "Bitbrains GWA-T-12 Rnd of July 2013, 500 VM files (Shen, van Beek, Iosup, CCGrid 2015): "
    "rnd/2013-7 of the Grid Workloads Archive's GWA-T-12 (gwa.ewi.tudelft.nl/datasets/gwa-t-12-bitbrains), "
    "as a directory or a .tar.gz of its files",
    "opendc_bitbrains_small_v4": "50 Bitbrains VMs over 30 days in OpenDC's schema v4 (tasks.parquet, "
    "fragments.parquet): github.com/atlarge-research/opendc-traces, workload/traces/v4/bitbrains-small",
    "cloudphysics_libcachesim": "CloudPhysics' trace of one VMware virtual disk (Waldspurger et al., FAST 2015), "
    "as libCacheSim ships it: github.com/1a1a11a/libCacheSim, data/cloudPhysicsIO.csv",
    "msr_cambridge_sample": "MSR Cambridge hm_0's first 1,000 requests (SNIA IOTTA 388), as Caffeine's simulator "
    "ships them: github.com/ben-manes/caffeine, parser/snia_cambridge/msr-cambridge1-sample.csv",
    "snia_systor17_sample": "two SNIA SYSTOR'17 VDI samples (IOTTA 4964), as Caffeine's simulator ships them: "
    "github.com/ben-manes/caffeine, parser/snia_systor",
    "tencent_cbs_sample": "50,000 Tencent Cloud Block Storage requests (SNIA IOTTA, Zhang et al., ATC 2020), as "
    "Caffeine's simulator ships them: github.com/ben-manes/caffeine, parser/snia_tencent_block",
}


class TraceError(ValueError):
    """A trace file is missing or malformed; the message names the file and line."""


def is_trace_set(spec: str) -> bool:
    """A directory of trace files, or a whole .tar.gz archive (no ':MEMBER')."""
    return Path(spec).is_dir() or (spec.endswith(".tar.gz") and ".tar.gz:" not in spec)


ORDERS = ("name", "listing")  # a set's files sorted by name, or as the file system lists them


def trace_set(spec: str, order: str = "name") -> list[str]:
    """The traces of a set, sorted by name (or in the listing's order): a directory's files, or an
    archive's files as 'ARCHIVE.tar.gz:MEMBER' (listing an archive reads it once)."""
    arrange = sorted if order == "name" else list
    try:
        if Path(spec).is_dir():
            with os.scandir(spec) as entries:  # readdir's order
                return arrange(
                    str(Path(spec) / entry.name)
                    for entry in entries
                    if entry.is_file() and not entry.name.startswith(".")
                )
        with tarfile.open(spec, "r:gz") as tar:  # hidden files (macOS ._*, .DS_Store) are no traces, as in a directory
            return arrange(f"{spec}:{m.name}" for m in tar.getmembers() if m.isfile() and not _hidden(m.name))
    except (OSError, tarfile.TarError) as exc:
        raise TraceError(f"{spec}: cannot list the trace set ({exc})") from None


def _hidden(member: str) -> bool:
    return any(part.startswith(".") and part not in (".", "..") for part in member.split("/"))


def vms_per_file(reader: Reader, raw: Any, base_dir: Path) -> Any:
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
                reader.error(f"{where}.{key}", "is set by files (one VM per file); remove it")
        listed = _listed(reader, entry["files"], base_dir, f"{where}.files")
        block = _block(reader, entry.get("block", "1/1"), f"{where}.block")
        if listed is None or block is None:  # one VM stands for the entry, the block's: read the rest as far as it goes
            stand_in = {"count": 1, "start": block[0] if block else 1}
            out.append({k: v for k, v in entry.items() if k not in ("files", "block")} | stand_in)
            continue
        (part, parts), total = block, len(listed[1])
        size = -(-total // parts)
        first = min((part - 1) * size, total)
        out.append({**entry, "files": listed[0], "count": min(size, total - first), "start": first + 1})
    return out


def _listed(reader: Reader, value: Any, base_dir: Path, where: str) -> tuple[str, list[str]] | None:
    if not isinstance(value, str) or not value:
        reader.error(where, f"expected a directory or .tar.gz of trace files, got {value!r}")
        return None
    path = Path(value) if Path(value).is_absolute() else (base_dir / value).resolve()
    if not path.exists():
        absent(reader, where, path, "trace set")
        return None
    if not is_trace_set(str(path)):
        reader.error(where, f"{str(path)!r} is no directory or .tar.gz of trace files")
        return None
    try:
        return str(path), trace_set(str(path))
    except TraceError as exc:
        reader.error(where, str(exc))
        return None


def _block(reader: Reader, value: Any, where: str) -> tuple[int, int] | None:
    part, slash, parts = str(value).partition("/")
    if isinstance(value, str) and slash and part.isdigit() and parts.isdigit() and 1 <= int(part) <= int(parts):
        return int(part), int(parts)
    reader.error(where, f"expected 'K/N' with 1 <= K <= N (the K-th of N blocks of the files), got {value!r}")
    return None


def absent(reader: Reader, where: str, path: Path, what: str = "trace file") -> None:
    """Record that nothing is at a trace path, with where the public set it names comes from."""
    source = public_source(path)
    message = f"{what} {str(path)!r} does not exist" + (
        f" (the public traces expected there: {source})" if source else ""
    )
    reader.problems.append(AbsentTraces(reader.place(where), message, str(path)))


def public_source(path: str | Path) -> str:
    """Where the public trace set a path names comes from ('' for a set PUBLIC_TRACES does not know)."""
    return next((PUBLIC_TRACES[part] for part in reversed(Path(path).parts) if part in PUBLIC_TRACES), "")


def pointing_params(path: str | Path, params: dict[str, Any], base_dir: Path) -> list[tuple[str, Any, Path]]:
    """(name, value, the path below the value's) of the [params] whose value is the path or a folder above it,
    read as the scenario reads paths (relative to its folder), the nearest first: what ``--param NAME=PATH``
    sets to read the traces from elsewhere."""
    target = Path(path)
    found = []
    for name, value in params.items():
        if not isinstance(value, str) or not value.strip() or "${" in value:
            continue
        place = Path(value) if Path(value).is_absolute() else (base_dir / value).resolve()
        if place == target or place in target.parents:
            found.append((name, value, target.relative_to(place)))
    return sorted(found, key=lambda f: len(f[2].parts))
