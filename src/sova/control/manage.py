"""`sova manage`: the MAPE-K loop on the wall clock against real hosts.

The same Runtime, policies, executor and audit log as a simulated run; only the clock and the driver
differ. In approve mode each plan is shown to a person (the ``ask`` callback), the findings it rests on
first, who approves or rejects it; plans nobody answers expire as in simulation. Every audit entry
(findings included) is handed to ``on_entry`` as it is written (the CLI prints it and appends it to a
JSONL file).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sova.control.audit import AuditEntry
from sova.control.runtime import Runtime
from sova.drivers.base import Driver
from sova.model.scenario import ControlSpec
from sova.plan.base import Policy

BUILTIN_PROFILES: dict[str, tuple[str, ...]] = {
    "default": (),
    "threshold": ("threshold-migration",),
    "dsriov": ("dsriov",),
    "vlm": ("sandpiper",),  # the Sova paper's VLM baseline is Sandpiper
    "sova": ("sova",),
    "cloudscope": ("cloudscope",),  # CloudScope Algorithm 1: move VMs predicted slow
    "cloudscope-dom0": ("cloudscope-dom0",),  # CloudScope Eq. 8: raise Dom0's weight for VMs missing their SLO
}


def manage(
    driver: Driver,
    policies: list[Policy],
    control: ControlSpec,
    mode: str = "auto",
    duration: float | None = None,
    tick: float = 1.0,
    on_entry: Callable[[AuditEntry], None] | None = None,
    ask: Callable[[int, list[str]], bool] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Runtime:
    """Run until `duration` seconds have passed (None: until interrupted or should_stop())."""
    rt = Runtime(driver, policies, control, mode)
    start = driver.now()
    seen = 0
    while duration is None or driver.now() - start < duration:
        if should_stop is not None and should_stop():
            break
        t = time.monotonic()
        rt.tick()
        if mode == "approve" and ask is not None:
            for pid, plan in list(rt.executor.pending.items()):
                findings = [f"finding: {f.describe()}" for f in plan.findings]
                actions = [a.describe() + (f"  ({a.reason})" if a.reason else "") for a in plan.actions]
                if ask(pid, findings + actions):
                    rt.executor.approve(pid, rt.knowledge)
                else:
                    rt.executor.reject(pid)
        entries = rt.audit.entries
        if on_entry is not None:
            for e in entries[seen:]:
                on_entry(e)
        seen = len(entries)
        time.sleep(max(0.0, tick - (time.monotonic() - t)))
    return rt
