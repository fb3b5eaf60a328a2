"""What-if runs for the manager, off its event loop: a cluster snapshot written to a private temporary
directory and `sova what-if SNAPSHOT --json` run on it in a child process at the lowest CPU priority
(nice 19), one at a time, so that the decision rounds (and the API) keep the CPU they need. A child is
killed past its time limit, and with the manager (PR_SET_PDEATHSIG). The answer is what_if_answer's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sova.model.cluster_snapshot import write_snapshot
from sova.model.observed_demand import ObservedDemand, demand_bytes
from sova.service.natsd import stop_with_parent

DEMAND_FILE = "cluster.demand.parquet"  # a snapshot named "cluster" names its demand file so
SAID_LINES = 6  # of a failed child's stderr, the last lines its error gives
NICE = 19  # the lowest priority: a forecast takes only the CPU nothing else wants


class WhatIfError(RuntimeError):
    """A what-if that did not answer: its child refused the input or failed, or it ran past its time."""


@dataclass(frozen=True)
class WhatIfAsk:
    """The alternatives beside doing nothing and the snapshot's running profile, if it has one (`sova what-if`'s
    options), and the horizon."""

    horizon: float = 1800.0
    drain: tuple[str, ...] = ()
    profiles: tuple[str, ...] = ()
    add_vms: tuple[str, ...] = ()  # NAME:VCPUS:MEMORY[:CPU]
    plan: tuple[dict, ...] = ()  # a plan's actions, as the API lists them

    def options(self, folder: Path) -> list[str]:
        """The command line's options for these alternatives (a plan is written into `folder`)."""
        words = ["--horizon", f"{self.horizon:g}"]
        for flag, values in (("--drain", self.drain), ("--profile", self.profiles), ("--add-vm", self.add_vms)):
            for value in values:
                words += [flag, value]
        if self.plan:
            plan_file = folder / "plan.json"
            plan_file.write_text(json.dumps(list(self.plan)))
            words += ["--plan", str(plan_file)]
        return words


class WhatIfRunner:
    def __init__(self, timeout: float = 900.0, nice: int = NICE):
        """timeout: seconds a what-if may run before it is killed."""
        self.timeout, self.nice = timeout, nice
        self._one = asyncio.Semaphore(1)
        self.running = 0  # children running now (0 or 1)

    async def run(
        self,
        document: dict,
        demand: ObservedDemand,
        ask: WhatIfAsk,
        source: str = "",
        started=lambda: None,
        wanted=lambda: True,
    ) -> dict | None:
        """The answer of `sova what-if` on this snapshot (a running_snapshot whose demand file is DEMAND_FILE),
        `source` naming where the snapshot came from (the answer's own names the temporary file); `started()`
        is called once its turn came (one runs at a time). None, with nothing run, if `wanted()` says no then
        (a plan's forecast whose plan was superseded while it waited)."""
        async with self._one:
            if not wanted():
                return None
            started()
            with tempfile.TemporaryDirectory(prefix="sova-what-if-") as place:
                folder = Path(place)
                await asyncio.to_thread(_write, folder, document, demand)
                command = [sys.executable, "-m", "sova.cli", "what-if", str(folder / "cluster.toml"), "--json"]
                answer = await self._child(command + ask.options(folder))
        return answer | ({"source": source} if source else {})

    async def _child(self, command: list[str]) -> dict:
        nice = self.nice

        def lowered() -> None:  # in the child, before it runs
            os.nice(nice)
            stop_with_parent()

        child = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, preexec_fn=lowered
        )
        self.running += 1
        try:
            out, err = await asyncio.wait_for(child.communicate(), self.timeout)
        except TimeoutError:
            raise WhatIfError(f"the what-if ran past {self.timeout:g} s and was stopped") from None
        finally:
            self.running -= 1
            if child.returncode is None:  # timed out, or this task was cancelled
                with contextlib.suppress(ProcessLookupError):
                    child.kill()
                await child.wait()
        if child.returncode != 0:
            said = [line.strip() for line in err.decode(errors="replace").splitlines() if line.strip()]
            reason = "; ".join(said[-SAID_LINES:]) if said else f"exit {child.returncode}"
            raise WhatIfError(f"the what-if failed: {reason}")
        return json.loads(out)


def _write(folder: Path, document: dict, demand: ObservedDemand) -> None:
    write_snapshot(folder / "cluster.toml", folder / DEMAND_FILE, document, demand_bytes(demand))
