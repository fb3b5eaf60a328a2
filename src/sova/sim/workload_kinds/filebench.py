"""Filebench's web server, file server and mail server (varmail) personalities, as the SASLO paper runs
them (its Table 3), seen from the block layer: `threads` threads each keep one request outstanding, as
fast as the storage lets them (a closed loop), random over Table 3's 50,000 files (the page cache's hits
are not modelled: every request reaches the device).

A request reads or writes a whole file when the file is smaller than the personality's IO size (all three
of Table 3's), so its size is min(filesize, iosize). The read share follows each personality's flow of
operations: the web server reads ten whole files per 16 KB log append (10 of 11 requests read); the file
server creates and writes a file, appends to one, reads one whole and deletes one (one read in three
data requests); varmail reads two files and appends to two per loop (half). Metadata operations (open,
close, stat, delete) take no data transfer and are not modelled; fsync makes varmail's appends reach the
device rather than the page cache.
"""

from __future__ import annotations

import numpy as np

from sova.sim.workload_kinds.base import IOStreams, WorkloadKind, register_kind

AS_FAST_AS_POSSIBLE = 1e9  # IOs per second offered: the threads, not a rate, bound the stream

# Table 3: files, threads, file size, IO size; and the read share of each personality's data requests
PERSONALITIES = {
    "webserver": (50_000, 100, 16 * 1024, 512 * 1024, 10 / 11),
    "fileserver": (50_000, 50, 128 * 1024, 1024 * 1024, 1 / 3),
    "varmail": (50_000, 16, 16 * 1024, 16 * 1024, 1 / 2),
}


def table3(personality: np.ndarray, column: int, given: np.ndarray) -> np.ndarray:
    """A parameter per instance: the value the scenario gave, or Table 3's for its personality (0)."""
    default = np.array([PERSONALITIES[str(p)][column] for p in personality], dtype=float)
    return np.where(given > 0, given, default)


@register_kind
class Filebench(WorkloadKind):
    name = "filebench"
    order = 66
    does_io = True

    def io(self, group, sim, t, dt) -> IOStreams:
        p = group.params
        kind = p["personality"]
        threads = table3(kind, 1, p["threads"])
        size = np.minimum(table3(kind, 2, p["filesize"]), table3(kind, 3, p["iosize"]))
        read = np.array([PERSONALITIES[str(k)][4] for k in kind])
        return IOStreams(group.vm, np.full(len(group), AS_FAST_AS_POSSIBLE), size, read, threads)
