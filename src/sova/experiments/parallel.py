"""Independent runs of a study (profiles, sweep values, trials) on this machine's cores or a Dask cluster.

``run_all(function, items, workers, cluster)`` returns ``[function(item) for item in items]``, in order,
whoever computes them: here, one after the other (workers 1); in ``workers`` processes of this machine;
or on a Dask distributed cluster (``cluster = "tcp://HOST:PORT"``), whose workers need Sova installed.
A run is deterministic for its seed, so the results are those of a serial run. ``done(n)`` is called as
the n-th run finishes, for a progress bar over the whole study.

A local pool is a multiprocessing Pool, which can be terminated at once on Ctrl-C or SIGTERM (signals
are the parent's business: ``signals.worker_process``); on a cluster, the futures not done yet are
cancelled.
"""

from __future__ import annotations

import multiprocessing
import os
import traceback
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sova.experiments import signals

Item = TypeVar("Item")
Result = TypeVar("Result")
Done = Callable[[int], None]


class ClusterError(RuntimeError):
    """The Dask cluster cannot be reached or failed a run; the message says which and why."""


class RunFailed(Exception):
    """A run raised: which item (its index), the error with its traceback (as text: it may come from another
    process), and the results of the runs that had finished, by index, so that none of them is lost."""

    def __init__(self, index: int, error: str, trace: str, finished: dict[int, Any] | None = None):
        super().__init__(index, error, trace, finished)
        self.index, self.error, self.trace, self.finished = index, error, trace, finished or {}

    def __str__(self) -> str:
        return self.error


class _Guarded:
    """function(item), its error (a bug, not Ctrl-C) raised as RunFailed with the item's index and traceback."""

    def __init__(self, function):
        self.function = function

    def __call__(self, indexed):
        k, item = indexed
        try:
            return k, self.function(item)
        except Exception as exc:
            raise RunFailed(k, f"{type(exc).__name__}: {exc}", traceback.format_exc()) from None


def run_all(
    function: Callable[[Item], Result],
    items: Sequence[Item],
    workers: int = 1,
    cluster: str | None = None,
    done: Done | None = None,
) -> list[Result]:
    """function(item) for every item, in the items' order (see the module's docstring). A run that raises
    ends the study with RunFailed, which holds the results of the runs that had finished."""
    finished: dict[int, Any] = {}
    try:
        if cluster:
            _on_cluster(_Guarded(function), items, cluster, done, finished)
        elif min(workers, len(items)) <= 1:
            guarded = _Guarded(function)
            for n, indexed in enumerate(enumerate(items), start=1):
                k, finished[k] = guarded(indexed)
                if done:
                    done(n)
        else:
            _in_processes(_Guarded(function), items, min(workers, len(items)), done, finished)
    except RunFailed as failure:
        failure.finished = dict(sorted(finished.items()))
        raise
    return [finished[k] for k in range(len(items))]


def _in_processes(guarded: _Guarded, items, workers: int, done: Done | None, finished: dict[int, Any]) -> None:
    pool = None
    try:
        with signals.held():  # a pool cut short while it starts can hang the exit; started, it can be ended
            pool = multiprocessing.Pool(workers, initializer=signals.worker_process, initargs=(os.getpid(),))
        for n, (k, result) in enumerate(pool.imap_unordered(guarded, enumerate(items)), start=1):
            finished[k] = result  # results come back in any order and are put in place
            if done:
                done(n)
        pool.close()
    except BaseException:
        if pool is not None:
            pool.terminate()
        raise
    finally:
        if pool is not None:
            pool.join()


def _on_cluster(guarded: _Guarded, items, address: str, done: Done | None, finished: dict[int, Any]) -> None:
    try:
        from distributed import Client, as_completed
    except ImportError as exc:  # pragma: no cover - a dependency of Sova
        raise ClusterError(f"--cluster needs dask.distributed ({exc})") from None
    try:
        client = Client(address, timeout=10)
    except (OSError, TimeoutError, ValueError) as exc:  # ValueError: an address Dask cannot read
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    futures = []
    try:
        futures = client.map(guarded, list(enumerate(items)), pure=False)
        for n, future in enumerate(as_completed(futures), start=1):
            k, finished[k] = future.result()  # a run's own error is raised here, as in a serial run
            if done:
                done(n)
    finally:
        client.cancel([f for f in futures if not f.done()])
        client.close()
