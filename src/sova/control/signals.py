"""Signals around work that must not be cut in half: Ctrl-C and SIGTERM held back, or passed on to workers.

``held()`` defers SIGINT and SIGTERM while a short critical step runs (moving results into place, starting
a process pool) and delivers the first one afterwards, so the step is either not begun or complete.
``worker_process()`` prepares a worker process: the parent alone answers Ctrl-C, SIGTERM ends the worker
at once, and on Linux the worker is sent SIGTERM when its parent dies, so no worker outlives a killed run.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
from collections.abc import Iterator

_PR_SET_PDEATHSIG = 1  # prctl(2)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back while the block runs; deliver the first one caught afterwards."""
    caught: list[int] = []
    sigs = (signal.SIGINT, signal.SIGTERM)
    try:
        before = {s: signal.signal(s, lambda signum, frame: caught.append(signum)) for s in sigs}
    except ValueError:  # not the main thread: signals go to the main thread anyway
        yield
        return
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        for s in caught[:1]:
            signal.raise_signal(s)


def worker_process() -> None:
    """Initializer of a worker process (a multiprocessing Pool's): signals are the parent's business."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
