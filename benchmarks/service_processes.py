"""The service's processes as the service benchmarks run them (service_load.py, many_agents.py,
api_under_load.py): started with their output in a log, waited for until every host reports, profiled
with py-spy if asked, and stopped (SIGTERM, then SIGKILL after a minute)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx


def spawn(command: list[str], env: dict, log: Path, nice: int = 0) -> subprocess.Popen:
    """`command` with stdout and stderr in `log`, at scheduling priority `nice`."""
    with log.open("wb") as out:
        return subprocess.Popen(
            command,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: os.setpriority(os.PRIO_PROCESS, 0, nice),
        )


def wait_reporting(url: str, hosts: int, processes: dict, workdir: Path, timeout: float) -> None:
    """Until the manager at `url` has `hosts` hosts reporting; an error naming a process that ended, or
    the timeout, and where its logs are."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
            if httpx.get(f"{url}/healthz", timeout=10).json()["hosts_reporting"] >= hosts:
                return
        ended = [name for name, process in processes.items() if process.poll() is not None]
        if ended or time.monotonic() > deadline:
            raise RuntimeError(f"not every host reported ({', '.join(ended) or 'timeout'}); see {workdir}")
        time.sleep(0.5)


def py_spy(pid: int, seconds: float, out: Path | None, rate: int = 100) -> subprocess.Popen | None:
    """py-spy sampling `pid` for `seconds` at `rate` Hz into `out` (collapsed stacks), if asked."""
    if out is None:
        return None
    binary = Path(sys.executable).with_name("py-spy")
    command = [str(binary) if binary.exists() else "py-spy", "record", "-p", str(pid), "-d", str(int(seconds))]
    return subprocess.Popen([*command, "-r", str(rate), "--format", "raw", "-o", str(out)], stdout=subprocess.DEVNULL)


def stop(processes: dict[str, subprocess.Popen]) -> None:
    """SIGTERM to every process still running, then each waited for (killed after 60 s)."""
    for process in processes.values():
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes.values():
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
