"""What-ifs asked through the API, as jobs: a what-if of a large cluster over hours takes minutes, longer than
an HTTP client or proxy waits, so `POST /api/v1/what-if` answers at once with a job and `GET
/api/v1/what-if/{id}` follows it. At most QUEUED_MAX jobs wait or run at once (a next one is refused: 429);
the last KEEP ended ones are kept, in memory only (a manager that restarts forgets them)."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

QUEUED_MAX = 4
KEEP = 20


class Busy(RuntimeError):
    """Too many what-ifs wait already."""


@dataclass
class WhatIfJob:
    id: int
    asked: float  # wall clock
    by: str
    state: str = "queued"  # queued -> running -> done | failed
    answer: dict | None = None
    error: str | None = None
    ended: float | None = None
    task: asyncio.Task | None = field(default=None, repr=False)

    def view(self) -> dict:
        return {
            "id": self.id,
            "asked": self.asked,
            "by": self.by,
            "state": self.state,
            "ended": self.ended,
            "answer": self.answer,
            "error": self.error,
        }


class WhatIfJobs:
    def __init__(self, queued_max: int = QUEUED_MAX, keep: int = KEEP):
        self.queued_max, self.keep = queued_max, keep
        self.jobs: dict[int, WhatIfJob] = {}
        self._ids = itertools.count(1)

    def submit(self, run: Callable[[Callable[[], None]], Awaitable[dict]], by: str) -> WhatIfJob:
        """A job running `run(started)` (which calls `started()` once its turn came) on the event loop."""
        if sum(job.state in ("queued", "running") for job in self.jobs.values()) >= self.queued_max:
            raise Busy(f"{self.queued_max} what-ifs wait or run already; ask again once one has ended")
        job = WhatIfJob(next(self._ids), time.time(), by)
        self.jobs[job.id] = job
        job.task = asyncio.create_task(self._run(job, run))
        self._forget()
        return job

    async def _run(self, job: WhatIfJob, run) -> None:
        def started() -> None:
            job.state = "running"

        try:
            job.answer = await run(started)
            job.state = "done"
        except Exception as exc:  # its error is the job's answer; the manager goes on
            job.state, job.error = "failed", str(exc) or type(exc).__name__
        finally:
            job.ended = time.time()

    def _forget(self) -> None:
        ended = [job for job in self.jobs.values() if job.ended is not None]
        for job in ended[: max(0, len(ended) - self.keep)]:
            del self.jobs[job.id]

    async def stop(self) -> None:
        tasks = [job.task for job in self.jobs.values() if job.task is not None and not job.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
