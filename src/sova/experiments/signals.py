"""Signals around work that must not be cut in half: Ctrl-C and SIGTERM held back, or passed on to workers.

``held()`` defers SIGINT and SIGTERM while a short critical step runs (moving results into place, starting
a process pool) and delivers the first one afterwards, so the step is either not begun or complete. A
process forked inside the block (a pool's worker) does not hold them: told to end before its own set-up
ran, it ends (else a pool terminated at once would wait for it for ever).
``worker_process()`` prepares a worker process: the parent alone answers Ctrl-C, SIGTERM ends the worker
at once, and on Linux the worker is sent SIGTERM when its parent dies, so no worker outlives a killed run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
from collections.abc import Iterator

_PR_SET_PDEATHSIG = 1  # prctl(2)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back while the block runs; deliver one caught afterwards (SIGTERM if both)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread can set handlers, and signals go to it anyway
        return
    caught: set[int] = set()
    sigs = (signal.SIGINT, signal.SIGTERM)
    owner = os.getpid()

    def hold(signum: int, frame) -> None:
        if os.getpid() != owner:  # a process forked meanwhile (a pool's worker before its initializer ran)
            signal.signal(signum, signal.SIG_DFL)  # is not holding anything back: it ends as told
            os.kill(os.getpid(), signum)
            return
        caught.add(signum)

    before = {s: signal.signal(s, hold) for s in sigs}
    try:
        yield
    finally:
        for s, handler in before.items():
            # None: the handler was set outside Python; the default is the closest we can restore
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
        for s in sigs[::-1]:
            if s in caught:
                signal.raise_signal(s)
                break


def worker_process(parent: int) -> None:
    """Initializer of a worker process (a multiprocessing Pool's): signals are the parent's business.
    `parent` is the parent's pid: if it died before the death signal was armed, the worker ends now."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
    if os.getppid() != parent:
        os._exit(1)
