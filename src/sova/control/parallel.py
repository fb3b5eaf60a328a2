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
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sova.control import signals

Item = TypeVar("Item")
Result = TypeVar("Result")
Done = Callable[[int], None]


class ClusterError(RuntimeError):
    """The Dask cluster cannot be reached or failed a run; the message says which and why."""


def run_all(
    function: Callable[[Item], Result],
    items: Sequence[Item],
    workers: int = 1,
    cluster: str | None = None,
    done: Done | None = None,
) -> list[Result]:
    """function(item) for every item, in the items' order (see the module's docstring)."""
    if cluster:
        return _on_cluster(function, items, cluster, done)
    workers = min(workers, len(items))
    if workers <= 1:
        out = []
        for n, item in enumerate(items, start=1):
            out.append(function(item))
            if done:
                done(n)
        return out
    return _in_processes(function, items, workers, done)


def _in_processes(function, items, workers: int, done: Done | None) -> list[Any]:
    pool = None
    results: list[Any] = [None] * len(items)
    try:
        with signals.held():  # a pool cut short while it starts can hang the exit; started, it can be ended
            pool = multiprocessing.Pool(workers, initializer=signals.worker_process, initargs=(os.getpid(),))
        for n, (k, result) in enumerate(pool.imap_unordered(_Indexed(function), enumerate(items)), start=1):
            results[k] = result
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
    return results


class _Indexed:
    """(k, item) -> (k, function(item)): results come back in any order and are put in place."""

    def __init__(self, function):
        self.function = function

    def __call__(self, indexed):
        k, item = indexed
        return k, self.function(item)


def _on_cluster(function, items, address: str, done: Done | None) -> list[Any]:
    try:
        from distributed import Client, as_completed
    except ImportError as exc:  # pragma: no cover - a dependency of Sova
        raise ClusterError(f"--cluster needs dask.distributed ({exc})") from None
    try:
        client = Client(address, timeout=10)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    futures = []
    try:
        futures = client.map(function, list(items), pure=False)
        position = {f.key: k for k, f in enumerate(futures)}
        results: list[Any] = [None] * len(items)
        for n, future in enumerate(as_completed(futures), start=1):
            results[position[future.key]] = future.result()  # a run's own error is raised here, as in a serial run
            if done:
                done(n)
        return results
    finally:
        client.cancel([f for f in futures if not f.done()])
        client.close()
