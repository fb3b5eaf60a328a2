"""The executor: applies plans under safety rails, in auto, approve or dry-run mode.

Rails, checked when an action is about to start (against the newest Knowledge). Common to every kind:
- the VM and hosts exist; nothing else is running on the same VM (actions on one VM run in order,
  so "detach the VF, then migrate" waits for the unplug to finish);
- no action on a host that has not reported for three monitor periods (a VM's host, the host it puts a VM
  on): what it shows is old (a restart's VM is on a failed host: only where it boots counts);
- placement rules (``knowledge.rules``): an action that puts a VM on a host (``Action.placed_on``: a
  migration, a creation, a restart) may not break a must rule, the VMs migrating (or restarting) counted
  where they go as well as where they are; an affinity group moves as one plan (a move towards the members
  that the same plan moves there is allowed).
And those of a kind (``sova.control.action_rails``): a migration's caps, hold-down, memory and CPU headroom;
a VF attach's free VF; sleep or off only for an empty host; a restart's memory where it boots.
A running action that outlives ``action_timeout`` is cancelled and recorded as timed out. In approve
mode plans wait for ``approve(plan)``/``reject(plan)`` and expire after ``approval_timeout``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sova.analyze.findings import Finding, Findings
from sova.control.action_rails import RAILS, Busy, QueuePass
from sova.control.audit import AuditLog
from sova.drivers.base import Driver
from sova.model.actions import DRY_RUN, EXPIRED, OK, PENDING, REJECTED, RUNNING, TIMEOUT, Action, Outcome
from sova.model.knowledge import Knowledge
from sova.model.scenario import ControlSpec
from sova.model.snapshot import Snapshot

_ENDINGS = frozenset({"finished", "rejected", "expired", "superseded", "dry-run"})


@dataclass
class _Job:
    plan: int
    action: Action
    started: float = 0.0
    patient: bool = False  # waits while its verdict is Busy, up to action_timeout from `queued`
    queued: float = 0.0


@dataclass
class PendingPlan:
    id: int
    actions: list[Action]
    created: float
    findings: tuple[Finding, ...] = ()  # those the plan rests on


class Executor:
    def __init__(self, driver: Driver, control: ControlSpec, mode: str = "auto", audit: AuditLog | None = None):
        if mode not in ("auto", "approve", "dry-run"):
            raise ValueError(f"unknown executor mode {mode!r}; expected auto, approve or dry-run")
        self.driver = driver
        self.rails = control
        self.mode = mode
        self.audit = audit or AuditLog()
        self.queued: list[_Job] = []
        self.running: list[_Job] = []
        self.pending: dict[int, PendingPlan] = {}
        self.last_migrated: dict[str, float] = {}
        self.settled: list[tuple[Action, Outcome]] = []  # actions that ended, for their policies to see
        self._seq = 0

    def now(self) -> float:
        return self.driver.now()

    def _record(self, now: float, plan: int, event: str, action: Action, outcome: Outcome | None = None) -> None:
        """Audit an event; an action that ended (finished, rejected, expired, failed or done at once) is also
        kept in ``settled`` until the runtime hands it to its policy."""
        self.audit.record(now, plan, event, action, outcome)
        if outcome is not None and (event in _ENDINGS or (event == "applied" and outcome.status != RUNNING)):
            self.settled.append((action, outcome))

    # ---------------------------------------------------------------- plans
    def submit(
        self,
        actions: list[Action],
        knowledge: Knowledge,
        findings: Findings | None = None,
        patient: bool = False,
        lost: dict[int, str] | None = None,
    ) -> int | None:
        """Take a plan from a policy, with the findings it was made from; returns its id (None for an empty
        plan). The audit log records the findings the plan rests on (``Findings.behind``) before its actions.
        patient: its actions wait while a migration cap is full (an evacuation), instead of being rejected.
        lost: the actions (by identity) that lost a conflict with another policy's, each with why: they are
        recorded as proposed and rejected, and the rest goes on."""
        if not actions:
            return None
        if self.mode == "approve":  # a plan that asks what one waiting asks already is that plan
            same = self._pending_same([kept for kept in actions if id(kept) not in (lost or {})])
            if same is not None:
                return same
        self._seq += 1
        now = self.driver.now()
        behind = findings.behind(actions, knowledge.latest) if findings is not None else ()
        for finding in behind:
            self.audit.record_finding(now, self._seq, actions[0].policy, finding)
        for action in actions:
            self._record(now, self._seq, "proposed", action)
        if lost:
            for action in actions:
                if id(action) in lost:
                    self._record(now, self._seq, "rejected", action, Outcome(REJECTED, lost[id(action)], now, now))
            actions = [kept for kept in actions if id(kept) not in lost]
        if self.mode == "dry-run":
            for action in actions:
                verdict = self.check(action, knowledge)
                msg = f"not applied (dry run); rails: {verdict or 'would pass'}"
                self._record(now, self._seq, "dry-run", action, Outcome(DRY_RUN, msg, now, now))
        elif self.mode == "approve":
            self.pending[self._seq] = PendingPlan(self._seq, list(actions), now, behind)
            for action in actions:
                self._record(now, self._seq, "pending", action, Outcome(PENDING, "waiting for approval", now))
            self._supersede(self._seq, now)
        else:
            self.queued.extend(_Job(self._seq, queued_action, patient=patient, queued=now) for queued_action in actions)
            self._start_ready(knowledge)
        return self._seq

    def _pending_same(self, actions: list[Action]) -> int | None:
        """The waiting plan whose actions are these (as their descriptions say), if any."""
        wanted = sorted(action.describe() for action in actions)
        for plan_id, plan in self.pending.items():
            if sorted(action.describe() for action in plan.actions) == wanted:
                return plan_id
        return None

    def _supersede(self, newer: int, now: float) -> None:
        """Waiting plans with an action on a target of plan `newer` end as superseded by it: a person sees
        only the latest recommendation for a VM or host."""
        targets = {action.target for action in self.pending[newer].actions}
        older = [
            pid for pid, plan in self.pending.items() if pid != newer and targets & {a.target for a in plan.actions}
        ]
        for plan_id in older:
            for action in self.pending.pop(plan_id).actions:
                outcome = Outcome(REJECTED, f"superseded by plan {newer}", now, now)
                self._record(now, plan_id, "superseded", action, outcome)

    def resume(self, plan_id: int, action: Action, running: bool) -> None:
        """Take on an action of a plan a previous executor left (a restarted manager): `running` if it was
        started (it is polled until it ends), else queued (the rails check it again before it starts)."""
        self._seq = max(self._seq, plan_id)
        job = _Job(plan_id, action, self.driver.now())
        (self.running if running else self.queued).append(job)

    def restore_pending(self, plan: PendingPlan) -> None:
        """Take on a plan that waits for approval (a restarted manager's, from its state)."""
        self._seq = max(self._seq, plan.id)
        self.pending[plan.id] = plan

    def continue_from(self, plan_id: int) -> None:
        """Number the next plan after `plan_id` (the last a previous executor gave out)."""
        self._seq = max(self._seq, plan_id)

    def open_plans(self) -> set[int]:
        """Plans with an action queued or running."""
        return {job.plan for job in self.queued} | {job.plan for job in self.running}

    def in_flight(self) -> list[tuple[Action, bool]]:
        """The actions in hand, each with whether it has started (the rest wait in the queue)."""
        return [(job.action, True) for job in self.running] + [(job.action, False) for job in self.queued]

    def preempt(self, action: Action, why: str) -> None:
        """Drop a queued action (recorded as rejected, with why) for another policy's of a higher priority."""
        now = self.driver.now()
        for job in [queued_job for queued_job in self.queued if queued_job.action is action]:
            self.queued.remove(job)
            self._record(now, job.plan, "rejected", action, Outcome(REJECTED, why, now, now))

    def drop_queued(self, plan_id: int, why: str) -> int:
        """Drop a plan's actions that have not started (recorded as rejected); how many."""
        now = self.driver.now()
        dropped = [job for job in self.queued if job.plan == plan_id]
        self.queued = [job for job in self.queued if job.plan != plan_id]
        for job in dropped:
            self._record(now, plan_id, "rejected", job.action, Outcome(REJECTED, why, now, now))
        return len(dropped)

    def approve(self, plan_id: int, knowledge: Knowledge, by: str = "operator") -> None:
        """Start a pending plan's actions; `by`: who approved it (a token's name), for the audit trail."""
        plan = self._take_pending(plan_id)
        now = self.driver.now()
        for action in plan.actions:
            self._record(now, plan_id, "approved", action, Outcome(OK, f"approved by {by}", now))
        self.queued.extend(_Job(plan_id, approved_action) for approved_action in plan.actions)
        self._start_ready(knowledge)

    def reject(self, plan_id: int, why: str = "rejected by operator") -> None:
        plan = self._take_pending(plan_id)
        now = self.driver.now()
        for action in plan.actions:
            self._record(now, plan_id, "rejected", action, Outcome(REJECTED, why, now, now))

    def _take_pending(self, plan_id: int) -> PendingPlan:
        if plan_id not in self.pending:
            known = ", ".join(map(str, sorted(self.pending))) or "none"
            raise KeyError(f"no plan {plan_id} is waiting for approval (waiting: {known})")
        return self.pending.pop(plan_id)

    # ---------------------------------------------------------------- progress
    def tick(self, knowledge: Knowledge) -> None:
        """Poll running actions, enforce timeouts, expire stale plans, start what can start."""
        now = self.driver.now()
        still = []
        for job in self.running:
            out = self.driver.poll(job.action)
            if out.status == RUNNING:
                if now - job.started > self.rails.action_timeout:
                    if self.driver.cancel(job.action).status == RUNNING:  # cannot be stopped (post-copy)
                        still.append(job)
                        continue
                    msg = f"no result after {self.rails.action_timeout:g} s; cancelled"
                    self._record(now, job.plan, "finished", job.action, Outcome(TIMEOUT, msg, job.started, now))
                    continue
                still.append(job)
                continue
            RAILS.of(job.action).finished(self, job.action, out)
            self._record(now, job.plan, "finished", job.action, out)
        self.running = still
        for pid in [
            plan_id for plan_id, plan in self.pending.items() if now - plan.created > self.rails.approval_timeout
        ]:
            for action in self.pending.pop(pid).actions:
                msg = f"not approved within {self.rails.approval_timeout:g} s"
                self._record(now, pid, "expired", action, Outcome(EXPIRED, msg, now, now))
        self._start_ready(knowledge)

    def _start_ready(self, knowledge: Knowledge) -> None:
        """Start queued actions in order; one at a time per target; a rejection drops its plan's
        later actions on the same target (they depended on it)."""
        now = self.driver.now()
        busy = {running_job.action.target for running_job in self.running}
        counts = (
            QueuePass(knowledge, [running_job.action for running_job in self.running])
            if self.queued and len(knowledge)
            else None
        )
        blocked: set[tuple[int, str]] = set()
        keep = []
        for job in self.queued:
            key = (job.plan, job.action.target)
            if key in blocked:
                why = Outcome(REJECTED, "an earlier action of its plan on the same target was rejected", now, now)
                self._record(now, job.plan, "rejected", job.action, why)
                continue
            if job.action.target in busy:
                keep.append(job)
                continue
            verdict = self.check(job.action, knowledge, counts, job.plan)
            if isinstance(verdict, Busy) and job.patient and now - job.queued < self.rails.action_timeout:
                keep.append(job)
                busy.add(job.action.target)  # its plan's later actions on the VM wait behind it
                continue
            if verdict:
                details = {"not_now": True} if isinstance(verdict, Busy) else {}  # a cap or the headroom: try later
                self._record(now, job.plan, "rejected", job.action, Outcome(REJECTED, verdict, now, now, details))
                blocked.add(key)
                continue
            out = self.driver.apply(job.action)
            self._record(now, job.plan, "applied", job.action, out)
            if out.status == RUNNING:
                job.started = now
                self.running.append(job)
                RAILS.of(job.action).started(job.action, counts)
                busy.add(job.action.target)
            elif out.status != OK:
                blocked.add(key)
        self.queued = keep

    # ---------------------------------------------------------------- rails
    def check(
        self, action: Action, knowledge: Knowledge, counts: QueuePass | None = None, plan: int | None = None
    ) -> str | None:
        """Why the action may not start now, or None if it may: the common rails, then its kind's
        (``action_rails``). `counts`: what the pass over the queue has counted, if the caller keeps count (else
        counted here); `plan`: the plan the action is of (its other migrations count for affinity)."""
        if not len(knowledge):
            return "no observation of the cluster yet"
        snap = knowledge.latest
        vm_name = getattr(action, "vm", None)
        if vm_name is not None and vm_name not in snap.vm_position:
            return f"no VM named {vm_name!r}"
        host_name = getattr(action, "host", None)
        if host_name is not None and host_name not in snap.host_position:
            return f"no host named {host_name!r}"
        silent = self._silent(snap, action)
        if silent:
            return Busy(silent)
        if action.placed_on is not None and knowledge.rules:
            broken = self._check_rules(action, knowledge, plan)
            if broken:
                return broken
        counts = counts or QueuePass(knowledge, [job.action for job in self.running])
        return RAILS.of(action).check(self, action, counts)

    def _check_rules(self, action: Action, knowledge: Knowledge, plan: int | None) -> str | None:
        """The must rule the action would break where it puts its VM, said with the VM and host, or None."""
        snap = knowledge.latest
        host = action.placed_on
        if host not in snap.host_position:
            return None  # said by the other rails
        bound = knowledge.rules.bind(snap.vms, snap.hosts)
        if not bound.rules_of(action.vm):
            return None
        heading = {}
        for job in [
            *self.running,
            *(queued_job for queued_job in self.queued if queued_job.plan == plan and queued_job.action is not action),
        ]:
            going = job.action.placed_on
            if going is None or job.action.vm not in snap.vm_position:
                continue
            if going in snap.host_position:
                heading[snap.vm_position[job.action.vm]] = snap.host_position[going]
        rule = bound.breaking(action.vm, snap.host_position[host], snap.vm_host, heading)
        return None if rule is None else f"{action.vm} on {host} would break {rule.describe()}"

    def _silent(self, snap: Snapshot, action: Action) -> str | None:
        """Why the action may not act on a host now: the host (the VM's, or the one it names) has not
        reported for three monitor periods (a sensor gap, or a failure not declared yet), so what it shows
        is old. A restart acts on the host it boots the VM on only: its VM's host is the failed one."""
        if snap.host_seen is None:
            return None
        hosts = [] if action.acts_on_silent_host else [getattr(action, "host", None)]
        hosts.append(action.placed_on)
        if getattr(action, "vm", None) is not None and action.vm_host_acts:
            hosts.append(snap.hosts[snap.vm_host[snap.vm_position[action.vm]]])
        for host in hosts:
            if host is None or host not in snap.host_position:
                continue
            quiet = snap.time - snap.host_seen[snap.host_position[host]]
            if quiet > 3 * self.rails.monitor_period + 1e-9:
                return f"{host} has not reported for {quiet:g} s"
        return None
