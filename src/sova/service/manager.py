"""`sova manager`: the global loops over the bus. The agents' reports make its Knowledge; its policies'
plans go through the same executor, rails and approvals as in `sova manage`; their actions go to the
agents under ids, each recorded in the state store before it is sent, and their outcomes come back.

It runs the profile's global policies; the local ones (VF scheduling, Dom0 tuning, the storage SLO
engine) run in the agents, whose audit entries it writes to its own trail, and to which it gives the
tenants' storage SLOs (``SloKeeper``).

A round (every `tick` wall seconds): take the outcomes that came, run the MAPE-K loop on the merged
reports (if any host is fresh), write plans and audit entries to the store, send the actions. With a
lease (``service.lease``), only the leader runs rounds; the standby keeps the Knowledge the reports make
(its API shows the cluster). A manager that becomes leader first takes up the plans the store holds where
they stood (``PlanBook.resume``) and sends again what awaits an outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable

from sova.control.runtime import Runtime
from sova.control.snapshot_service import running_snapshot
from sova.model.cluster_snapshot import ExportSettings
from sova.model.knowledge import Knowledge
from sova.model.placement_rules import RuleBook, hosts_failed
from sova.model.scenario import ControlSpec, TopologySpec
from sova.plan.base import Policy
from sova.service.bus import Bus
from sova.service.bus_driver import BusDriver
from sova.service.dispatch import ActionDispatch
from sova.service.lease import Lease
from sova.service.local_audit import LocalAuditReader
from sova.service.plan_book import PlanBook
from sova.service.plan_forecasts import ForecastSettings, PlanForecasts
from sova.service.reporting import ReportCollector
from sova.service.slo_keeper import SloKeeper
from sova.service.state import StateStore
from sova.service.what_if_jobs import WhatIfJobs
from sova.service.what_if_runner import WhatIfRunner

log = logging.getLogger(__name__)


class ManagerError(RuntimeError):
    """A request the manager cannot carry out (unknown plan, not the leader, ...)."""


class Manager:
    def __init__(
        self,
        bus: Bus,
        store: StateStore,
        policies: list[Policy],
        control: ControlSpec,
        mode: str = "auto",
        profile: str = "",
        tick: float = 1.0,
        stale_after: float = 30.0,
        topology: TopologySpec | None = None,
        lease: Lease | None = None,
        action_expiry: float = 120.0,
        rules: RuleBook | None = None,
        fence_wait: float = 30.0,
        profile_table: dict | None = None,
        forecasts: ForecastSettings | None = None,
    ):
        """lease: the lease this manager leads under, beside a standby (None: it is the only manager);
        action_expiry: seconds after its sending that an agent may still start an action; rules: the
        operator's placement rules, which every policy and the executor keep (a drained host's rule is
        added to them); fence_wait: seconds a failed host's agent has to answer its fence; profile_table: the
        running profile as a scenario's [profiles.NAME] table (its name under "name"), which a snapshot's
        what-if runs as "as-is" (None: none); forecasts: each approve-mode plan's forecast (None: none)."""
        self.rules = rules
        self.bus, self.store, self.tick, self.mode, self.profile = bus, store, tick, mode, profile
        self.policies = [p for p in policies if p.loop == "global"]  # the local ones run in the agents
        self.control, self.topology = control, topology
        self.collector = ReportCollector(bus, stale_after)
        self.dispatch = ActionDispatch(bus, store)
        self.slos = SloKeeper(bus, store)
        self.local_audit = LocalAuditReader(bus, store)
        self.lease = lease
        self.action_expiry, self.fence_wait = action_expiry, fence_wait
        self.leading = False
        self.on_round: Callable[[float], None] = lambda seconds: None  # each decision round's duration (s)
        self.started = time.time()
        self.profile_table = profile_table or {}
        self.what_ifs = WhatIfRunner()  # one what-if at a time, the API's and the plans' forecasts
        self.what_if_jobs = WhatIfJobs()  # those asked through the API
        self.forecasts = None
        if forecasts is not None and mode == "approve":
            note = lambda plan, text: self.book.record_forecast(self.executor.now(), plan, text)  # noqa: E731
            self.forecasts = PlanForecasts(store, self.snapshot, self.forecast_source(), note, forecasts, self.what_ifs)
        self._fresh()

    def _fresh(self, knowledge: Knowledge | None = None) -> None:
        """A new loop and plan book: what a manager that is to lead starts from (the store has the rest,
        `knowledge` what it observed so far)."""
        self.book = PlanBook(self.store)
        self.driver = BusDriver(self.collector, self.book, self.dispatch, self.action_expiry, self.fence_wait)
        self.runtime = Runtime(
            self.driver,
            self.policies,
            self.control,
            self.mode,
            self.topology,
            audit=self.book,
            knowledge=knowledge,
            rules=self.rules if knowledge is None else None,  # a knowledge kept has them, and the drains
        )
        self.runtime.on_fenced = self.store.set_fenced

    @property
    def executor(self):
        return self.runtime.executor

    async def start(self) -> None:
        await self.collector.start()
        await self.slos.start()

    def is_leader(self) -> bool:
        return self.lease is None or self.lease.held()

    async def stop(self) -> None:
        await self.what_if_jobs.stop()
        if self.forecasts is not None:
            await self.forecasts.stop()
        await self.collector.stop()
        await self.slos.stop()
        if self.lease is not None:
            await self.lease.release()  # the standby need not wait for it to expire

    async def _take_lead(self) -> None:
        """Become the one that decides: take up the stored plans and send again what awaits an outcome."""
        if self.dispatch.reader is None:
            await self.dispatch.start()
        # a take-up that failed half-way must not leave its half behind; what it saw standing by stays, so
        # its policies start with that history
        self._fresh(self.runtime.knowledge)
        taken = self.book.resume(self.executor)
        self.runtime.keep_maintenance(list(self.store.maintenance()))
        self.runtime.keep_fenced(list(self.store.fenced()))
        self.executor.last_migrated.update(self.store.recent_migrations(self.control.hold_down))
        resent = await self.dispatch.send_unanswered()
        slos = await self.slos.take_lead()
        checks = self.forecasts.resume(self.runtime.knowledge) if self.forecasts is not None else 0
        self.leading = True
        log.info(
            "leading: took up %d plan(s), sent %d unanswered action(s) again, %d SLO(s), %d forecast check(s)",
            taken,
            resent,
            slos,
            checks,
        )

    async def round(self) -> None:
        """One round of the manager (nothing but watching the reports unless it leads)."""
        if self.lease is not None:
            await self.lease.renew()
        if not self.is_leader():
            if self.leading:  # lost the lease: what this manager held, the new leader takes from the store
                log.warning("no longer the leader; standing by")
                self.leading = False
                self._fresh(self.runtime.knowledge)
            self._watch()
            return
        if not self.leading:
            await self._take_lead()
        await self.dispatch.collect(wait=0.01)
        await self.local_audit.collect(wait=0.01)
        if not self.is_leader():  # the lease ran out meanwhile (a bus failing over is slow): plan nothing
            return  # the next round stands by, or renews
        if self.collector.snapshot() is not None:
            began = time.perf_counter()
            if self.runtime.tick():  # a decision round: a policy planned (the others only poll)
                self.on_round(time.perf_counter() - began)
            self.driver.forget_unawaited()
        self.book.flush()
        if self.forecasts is not None and len(self.runtime.knowledge):
            self.forecasts.poll(list(self.executor.pending), self.runtime.knowledge)
        await self.driver.send(self.is_leader)  # a manager that lost its lease meanwhile sends nothing

    def _watch(self) -> None:
        """Standing by: keep the Knowledge the reports make, every monitor period, so the API shows the
        cluster and the policies have their history the moment this manager leads."""
        knowledge = self.runtime.knowledge
        if self.collector.snapshot() is None:
            return
        now = self.driver.now()
        if not len(knowledge) or now >= knowledge.latest.time + self.control.monitor_period - 1e-9:
            knowledge.add(self.driver.observe())

    async def run(self, stop: asyncio.Event) -> None:
        """Rounds every `tick` seconds until `stop` is set; a bus fault fails a round, not the manager."""
        await self.start()
        try:
            while not stop.is_set():
                began = time.monotonic()
                try:
                    await self.round()
                except Exception as err:  # the bus or the store away: the next round tries again
                    log.warning("round failed: %s", err or type(err).__name__)
                remaining = self.tick - (time.monotonic() - began)
                if remaining > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), remaining)
        finally:
            await self.stop()

    # ------------------------------------------------------------------ operators' decisions
    async def decide(self, plan_id: int, verdict: str, by: str) -> dict:
        """Approve, reject or cancel a plan on behalf of `by`; what became of it. A cancelled plan drops its
        actions that have not been sent; those sent run to their end (only the agent can end them)."""
        if not (self.leading and self.is_leader()):
            raise ManagerError("this manager is not the leader; ask the leader")
        pending = plan_id in self.executor.pending
        if verdict == "approve":
            if not pending:
                raise ManagerError(self._not_pending(plan_id))
            self.book.decided_by[plan_id] = by
            self.executor.approve(plan_id, self.runtime.knowledge, by=by)
            dropped = 0
        elif pending:  # reject, or cancel before it was approved
            self.book.decided_by[plan_id] = by
            if verdict == "cancel":
                self.book.cancelled.add(plan_id)
            self.executor.reject(plan_id, f"{'rejected' if verdict == 'reject' else 'cancelled'} by {by}")
            dropped = 0
        elif verdict == "cancel" and plan_id in self.executor.open_plans():
            self.book.cancelled.add(plan_id)
            dropped = self.executor.drop_queued(plan_id, f"cancelled by {by}")
            self.book.record_cancel(self.executor.now(), plan_id, by, dropped)
        else:
            raise ManagerError(self._not_pending(plan_id))
        self.book.flush()
        await self.driver.send(self.is_leader)
        row = self.store.plan(plan_id)
        return {"plan": plan_id, "state": row.state if row else "", "dropped": dropped}

    async def maintain(self, host: str, drain: bool, by: str) -> dict:
        """Put `host` into maintenance (drain: its VMs move away under the rules and capacity, and it takes
        none) or release it, on behalf of `by`; kept in the store, so a manager taking the lead keeps it."""
        if not (self.leading and self.is_leader()):
            raise ManagerError("this manager is not the leader; ask the leader")
        knowledge = self.runtime.knowledge
        known = knowledge.latest.hosts if len(knowledge) else ()
        if host not in known:
            raise ManagerError(f"no host {host!r} has reported (known: {', '.join(known) or 'none'})")
        if not drain and host not in self.store.maintenance():
            raise ManagerError(f"{host} is not in maintenance")
        self.store.set_maintenance(host, by if drain else None)
        (self.runtime.drain if drain else self.runtime.release)(host, by=by)
        self.book.flush()
        snap = knowledge.latest
        return {
            "host": host,
            "maintenance": drain,
            "vms": int((snap.vm_host == snap.hosts.index(host)).sum()),
            "by": by,
        }

    async def confirm_fenced(self, host: str, by: str) -> dict:
        """An operator (`by`) confirms that a failed host is off (its fence failed, or it has none): its VMs
        may start elsewhere, and ha-restart starts them at the next round."""
        if not (self.leading and self.is_leader()):
            raise ManagerError("this manager is not the leader; ask the leader")
        failed = hosts_failed(self.runtime.knowledge.rules)
        if host not in failed:
            raise ManagerError(f"{host} is not declared failed (failed: {', '.join(failed) or 'none'})")
        self.runtime.fenced(host, f"{by} confirmed it is off")
        self.book.flush()
        snap = self.runtime.knowledge.latest
        return {"host": host, "fenced": True, "vms": int((snap.vm_host == snap.hosts.index(host)).sum()), "by": by}

    async def snapshot(self, settings: ExportSettings, as_is: bool = False, name: str = "cluster"):
        """The cluster now as a scenario and its demand series (running_snapshot): its profiles doing nothing
        and, with `as_is`, the running one. SnapshotError when too little was observed. Made in a thread from a
        frozen copy of the Knowledge, so the loop goes on meanwhile (0.5 s at 10,000 VMs, docs/benchmarks.md).
        The storage SLOs are those the tenant API keeps."""
        book = self.slos.book()
        return await asyncio.to_thread(
            running_snapshot,
            self.runtime.knowledge.frozen(),
            settings,
            self.profile_table if as_is else {},
            dataclasses.asdict(self.control),
            book,
            name=name,
            source=self.source(),
        )

    def source(self) -> str:
        """This manager, as a snapshot names where it came from."""
        return f"sova manager ({f'profile {self.profile}, ' if self.profile else ''}{self.mode})"

    def forecast_source(self) -> str:
        """Where a what-if's answer says its snapshot came from."""
        return f"the cluster of {self.source()}"

    def known_vms(self) -> set[str]:
        """The VMs of every host that has reported (an SLO can be set for these)."""
        return {vm for part, _ in self.collector.latest.values() for vm in part.vms}

    def _not_pending(self, plan_id: int) -> str:
        row = self.store.plan(plan_id)
        if row is None:
            return f"no plan {plan_id}"
        return f"plan {plan_id} is {row.state}, not waiting for approval"
