"""Forecasts on approve-mode plans, and each forecast checked against what the cluster then did.

When a plan starts waiting for approval, its forecast is made beside the decision rounds: the manager's
Knowledge as a snapshot (hosts, VMs, the last minutes of demand), and `sova what-if` on it in a child
process at the lowest priority (``what_if_runner``), with two alternatives over the horizon: doing nothing,
and the plan approved at once with no policy acting. The answer is kept with the plan (the API and the
dashboard show it) and summed up in the audit trail.

Once the plan is approved, the manager follows the cluster for the horizon from then on, from the reports
(the Knowledge), and compares it with the forecast's ``plan`` alternative:

- ``hot_host_seconds``: seconds some host's CPU was above 90 %; error = (forecast - measured) / horizon;
- ``hottest_host_p95``: the hottest host's CPU utilisation, 95th percentile; error = forecast - measured;
- ``migration_seconds``: the plan's migrations' time, summed over those that completed (their outcomes'
  start and end); error = (forecast - measured) / measured;
- ``source_cpu_after``: the CPU utilisation of the hosts the plan's migrations left (where their VMs ran at
  the approval), mean over the reports' spans that start after the last migration ended; error = forecast -
  measured.

Each error is a ratio (Prometheus' ``sova_forecast_error_ratio{quantity}``, the latest checked plan's). The
forecast assumes approval at once and the demand of the snapshot's window going on (``--after last``);
what came between is part of the error. A manager taking the lead takes up the checks of the plans approved
within their horizon before it led, where its Knowledge reaches back to the approval (``resume``).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np

from sova.model.cluster_snapshot import ExportSettings, SnapshotError
from sova.model.knowledge import Knowledge
from sova.service.state import StateStore
from sova.service.what_if_runner import WhatIfAsk, WhatIfError, WhatIfRunner

log = logging.getLogger(__name__)
HOT = 0.9  # a host above this CPU utilisation is hot (as the run's summary counts it)
CHECKED = ("hot_host_seconds", "hottest_host_p95", "migration_seconds", "source_cpu_after")
WAITING = ("pending",)
SPACING_SAMPLES = 64  # the newest reports whose spacing sets a forecast's sample interval
RUNNING = ("ongoing", "succeeded", "partially-succeeded", "failed")  # approved: the check starts


@dataclass(frozen=True)
class ForecastSettings:
    horizon: float = 1800.0  # s of the cluster's clock a forecast looks ahead
    window: float = 600.0  # s of demand history the snapshot takes (at most what the Knowledge holds)
    interval: float = 10.0  # s per demand sample


@dataclass
class _Check:
    """What the cluster did from a plan's approval (`start`, cluster clock) to start + horizon."""

    plan: int
    forecast: dict  # the forecast's `plan` alternative's quantities
    start: float
    end: float
    seen: float  # the newest snapshot's time taken in
    sources: frozenset[str] = frozenset()  # the hosts the plan's migrations leave
    hot_seconds: float = 0.0
    hottest: list[float] = field(default_factory=list)
    spans: list[float] = field(default_factory=list)
    source_util: list[tuple[float, float, float]] = field(default_factory=list)  # (span start, span, mean)

    def take(self, knowledge: Knowledge) -> None:
        """Each snapshot newer than the last taken, up to the first at or past the end: the hottest host over the
        span since the one before it."""
        for snap in list(knowledge.after(self.seen)):
            if self.seen >= self.end - 1e-9:
                break
            span = snap.time - self.seen
            util = knowledge.host_cpu_util(span, end=snap.time)
            if util is not None and len(util) and span > 0:
                hottest = float(np.max(util))
                self.hottest.append(hottest)
                self.spans.append(span)
                self.hot_seconds += span if hottest > HOT else 0.0
                left = [util[i] for i, host in enumerate(snap.hosts) if host in self.sources]
                if left:
                    self.source_util.append((self.seen, span, float(np.mean(left))))
            self.seen = snap.time

    def measured(self, outcomes: list[tuple[str, str, dict]]) -> dict[str, float | None]:
        migrated = [o for kind, status, o in outcomes if kind == "migrate" and status == "ok" and o.get("finished")]
        return {
            "hot_host_seconds": self.hot_seconds,
            "hottest_host_p95": _weighted_p95(self.hottest, self.spans),
            "migration_seconds": float(sum(o["finished"] - o["started"] for o in migrated)) if migrated else 0.0,
            "source_cpu_after": self._source_after(max(o["finished"] for o in migrated)) if migrated else None,
        }

    def _source_after(self, ended: float) -> float | None:
        after = [(span, util) for start, span, util in self.source_util if start >= ended - 1e-9]
        if not after:
            return None
        spans, utils = zip(*after, strict=True)
        return float(np.average(utils, weights=spans))


class PlanForecasts:
    def __init__(
        self,
        store: StateStore,
        snapshot: Callable[[ExportSettings], Awaitable[tuple[dict, object]]],
        source: str,
        note: Callable[[int, str], None],
        settings: ForecastSettings | None = None,
        runner: WhatIfRunner | None = None,
    ):
        """snapshot: the cluster now as a scenario without a running profile (running_snapshot's pair); source:
        where it comes from, in words; note: writes an audit note on a plan."""
        self.store, self.snapshot, self.note, self.source = store, snapshot, note, source
        self.settings = settings or ForecastSettings()
        self.runner = runner or WhatIfRunner()
        self.asked: set[int] = set()  # plans whose forecast was queued (this manager's)
        self.waiting: set[int] = set()  # the plans pending at the last round
        self.awaiting: dict[int, dict] = {}  # plan with a forecast, not yet approved -> its `plan` alternative's
        self.retry_at: dict[int, float] = {}  # plan -> when (cluster clock) its snapshot is tried again
        self.checks: dict[int, _Check] = {}
        self.tasks: set[asyncio.Task] = set()
        self.last_error: dict[str, float] = {}  # quantity -> the latest checked plan's error
        self.checked = 0  # plans checked by this manager

    def poll(self, waiting: list[int], knowledge: Knowledge) -> None:
        """Each round: forecast the plans that came to wait (`waiting`: those pending now); start following
        those approved since; finish the checks whose horizon passed."""
        now = knowledge.latest.time
        self.waiting = set(waiting)
        for plan in waiting:
            if plan not in self.asked and self.retry_at.get(plan, now) <= now:
                self.asked.add(plan)
                self.retry_at.pop(plan, None)
                task = asyncio.create_task(self._forecast(plan, self._export(knowledge), now))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
        for plan in self.awaiting.keys() - set(waiting):  # decided since: the store has how (flushed before)
            forecast = self.awaiting.pop(plan)
            row = self.store.plan(plan)
            if row is not None and row.state in RUNNING and row.decided_at is not None:  # else rejected, expired ...
                self.checks[plan] = _following(row, forecast, self.settings.horizon, knowledge)
        for plan, check in list(self.checks.items()):
            check.take(knowledge)
            if check.seen >= check.end - 1e-9:
                self._finish(self.checks.pop(plan))

    def resume(self, knowledge: Knowledge) -> int:
        """Taking the lead: follow the plans another manager approved within their horizon whose forecast it had
        not checked yet, where this manager's Knowledge (kept while it stood by) reaches back to the approval.
        The number taken up."""
        if not len(knowledge):
            return 0
        oldest, now = knowledge.snapshots[0].time, knowledge.latest.time
        rows = [row for state in RUNNING for row in self.store.plans(state)[0] if row.id not in self.checks]
        rows = [row for row in rows if row.decided_at is not None and row.decided_at >= oldest - 1e-9]
        stored = self.store.forecasts([row.id for row in rows])
        taken = 0
        for row in rows:
            entry = stored.get(row.id)
            if entry is None or not entry["answer"] or entry["checked"] is not None:
                continue
            if row.decided_at + entry["horizon"] > now:
                forecast = entry["answer"]["alternatives"][-1]["forecast"]
                self.checks[row.id] = _following(row, forecast, entry["horizon"], knowledge)
                taken += 1
        return taken

    def _export(self, knowledge: Knowledge) -> ExportSettings:
        """The snapshot's settings: the interval at least the reports' spacing (a simulated cluster's reports come
        its speed times a second apart on its clock)."""
        times = np.array([snap.time for snap in knowledge.snapshots[-SPACING_SAMPLES:]])
        spacing = float(np.diff(times).max()) if len(times) > 1 else 0.0
        interval = max(self.settings.interval, math.ceil(spacing - 1e-6))
        return ExportSettings(self.settings.window, interval, "last", self.settings.horizon)

    async def _forecast(self, plan: int, export: ExportSettings, now: float) -> None:
        row = self.store.plan(plan)
        if row is None or row.state not in WAITING:
            return
        horizon = self.settings.horizon
        try:
            document, demand = await self.snapshot(export)
        except SnapshotError as exc:  # too little observed yet: asked again an interval on, while it waits
            log.info("plan %d: no forecast yet: %s", plan, exc)
            self.asked.discard(plan)
            self.retry_at[plan] = now + export.interval
            return
        ask = WhatIfAsk(horizon, plan=tuple(row.actions))
        try:
            answer = await self.runner.run(document, demand, ask, self.source, wanted=lambda: plan in self.waiting)
        except (WhatIfError, OSError) as exc:
            log.warning("plan %d: no forecast: %s", plan, exc)
            self.store.put_forecast(plan, horizon, None, str(exc))
            return
        if answer is None:  # decided, superseded or expired while it waited for its turn: no use any more
            log.info("plan %d no longer waits: its forecast was not made", plan)
            return
        self.store.put_forecast(plan, horizon, answer)
        with_plan = answer["alternatives"][-1]
        self.awaiting[plan] = with_plan["forecast"]
        self.note(plan, _summary(with_plan, horizon))

    def _finish(self, check: _Check) -> None:
        measured = check.measured(self.store.plan_outcomes(check.plan))
        horizon = check.end - check.start
        result = {}
        for quantity in CHECKED:
            expected, got = check.forecast.get(quantity), measured[quantity]
            error = _error(quantity, expected, got, horizon)
            result[quantity] = {"forecast": expected, "measured": got, "error": error}
            if error is not None:
                self.last_error[quantity] = error
        self.store.put_forecast_check(check.plan, {"from": check.start, "to": check.end, "quantities": result})
        self.checked += 1

    async def stop(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


def _error(quantity: str, forecast: float | None, measured: float | None, horizon: float) -> float | None:
    if forecast is None or measured is None:
        return None
    if quantity == "hot_host_seconds":
        return (forecast - measured) / horizon
    if quantity in ("hottest_host_p95", "source_cpu_after"):
        return forecast - measured
    return (forecast - measured) / measured if measured > 0 else None


def _following(row, forecast: dict, horizon: float, knowledge: Knowledge) -> _Check:
    """The check of an approved plan (`row`) against its forecast, over the horizon from its approval; the hosts
    its migrations leave are where their VMs ran then."""
    start = row.decided_at
    snap = knowledge.at_or_before(start) or knowledge.latest
    where = dict(zip(snap.vms, snap.vm_host, strict=True))
    moved = [action["vm"] for action in row.actions if action.get("kind") == "migrate" and action.get("vm") in where]
    sources = frozenset(snap.hosts[where[vm]] for vm in moved)
    return _Check(row.id, forecast, start, start + horizon, seen=start, sources=sources)


def _weighted_p95(values: list[float], weights: list[float]) -> float | None:
    """The 95th percentile of values each holding for its span of time."""
    if not values:
        return None
    order = np.argsort(values)
    cumulative = np.cumsum(np.asarray(weights)[order])
    return float(np.asarray(values)[order][np.searchsorted(cumulative, 0.95 * cumulative[-1])])


def _summary(with_plan: dict, horizon: float) -> str:
    """The forecast in the audit trail's words: the trade-off against doing nothing, and the numbers."""
    forecast, difference = with_plan["forecast"], with_plan.get("difference") or {}
    hot, change = forecast["hot_host_seconds"], difference.get("hot_host_seconds") or 0.0
    return (
        f"forecast over {horizon:g} s: hot-host {hot:.0f} s ({change:+.0f} s against nothing), hottest host p95 "
        f"{forecast['hottest_host_p95']:.2f}, {forecast['migrations']} migration(s) taking "
        f"{forecast['migration_seconds']:.1f} s; {with_plan.get('tradeoff', '')}"
    ).strip()
