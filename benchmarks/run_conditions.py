"""What a benchmark ran under, for its figures to be read with: the date, the wall and CPU time it took,
and the machine's load average during the run (sampled every few seconds: the machine may be shared
with other work, and a figure measured under a load of 4 on 2 cores is not one measured on an idle one).

CPU time is this process's and that of the processes it started and waited for, with theirs
(``resource``): a benchmark starts its conditions first and takes their summary once everything it
started has ended, so the figures are the whole run's (its wall time, its CPU time: its cost, not its
share of the machine).
"""

from __future__ import annotations

import os
import resource
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """A live process's user + system CPU seconds (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mib(pid: int) -> float:
    """A live process's resident memory in MiB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class RunConditions:
    """Samples the 1-minute load average every `every` s from start() to stop(); summary() says all."""

    def __init__(self, every: float = 5.0):
        self.every = every
        self.loads: list[float] = []
        self.began_wall = datetime.now(UTC)
        self.began = time.monotonic()
        self.ended: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def start(self) -> RunConditions:
        self.began_wall = datetime.now(UTC)
        self.began = time.monotonic()
        self._cpu0 = self._own_cpu()
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.loads.append(os.getloadavg()[0])
            self._stop.wait(self.every)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.ended = time.monotonic()

    @staticmethod
    def _own_cpu() -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    def summary(self) -> dict:
        """Date (UTC), wall seconds, CPU seconds, and the load average's mean and range over the run."""
        ended = self.ended if self.ended is not None else time.monotonic()
        loads = self.loads or [os.getloadavg()[0]]
        return {
            "date": self.began_wall.strftime("%Y-%m-%d %H:%M UTC"),
            "wall_s": round(ended - self.began, 1),
            "cpu_s": round(self._own_cpu() - self._cpu0, 1),
            "cores": os.cpu_count(),
            "load_mean": round(sum(loads) / len(loads), 2),
            "load_min": round(min(loads), 2),
            "load_max": round(max(loads), 2),
        }

    def line(self) -> str:
        s = self.summary()
        return (
            f"{s['date']}: {s['wall_s']:.0f} s wall, {s['cpu_s']:.0f} s CPU; 1-min load average "
            f"{s['load_mean']:.2f} on average ({s['load_min']:.2f}-{s['load_max']:.2f}) on {s['cores']} cores"
        )
