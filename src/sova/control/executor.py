"""The executor: applies plans under safety rails, in auto, approve or dry-run mode.

Rails, checked when an action is about to start (against the newest Knowledge):
- the VM and hosts exist; nothing else is running on the same VM (actions on one VM run in order,
  so "detach the VF, then migrate" waits for the unplug to finish);
- no action on a host that has not reported for three monitor periods (a VM's host, a migration's
  destination): what it shows is old (a restart's VM is on a failed host: only where it boots counts);
- migrations: not to the VM's own host; no VF attached; per-VM hold-down after its last migration;
  at most ``max_migrations_per_host`` touching a host and ``max_migrations_cluster`` in all; memory
  free on the destination (counting migrations already heading there); the destination's CPU stays
  under ``cpu_headroom`` with the VM's current load added;
- VF attach: a free VF on the VM's host;
- host power: only a host with no VM, and none migrating to it, goes to sleep or off;
- restart of a failed host's VM: memory free on the host it boots on;
- placement rules (``knowledge.rules``): a migration or a VM's creation may not break a must rule, the VMs
  migrating (or restarting) counted where they go as well as where they are; an affinity group moves as one
  plan (a move towards the members that the same plan moves there is allowed).
A running action that outlives ``action_timeout`` is cancelled and recorded as timed out. In approve
mode plans wait for ``approve(plan)``/``reject(plan)`` and expire after ``approval_timeout``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sova.analyze.findings import Finding, Findings
from sova.control.audit import AuditLog
from sova.drivers.base import Driver
from sova.model import actions as A
from sova.model.knowledge import Knowledge
from sova.model.scenario import ControlSpec
from sova.model.snapshot import Snapshot

LOAD_WINDOW = 10.0
_ENDINGS = frozenset({"finished", "rejected", "expired", "dry-run"})


class Busy(str):
    """A verdict that only says "not now": a migration cap is full, or the destination's CPU is above the
    headroom for now. A patient plan's action waits for it (up to action_timeout); others are rejected."""


@dataclass
class _Job:
    plan: int
    action: A.Action
    started: float = 0.0
    patient: bool = False  # waits while its verdict is Busy, up to action_timeout from `queued`
    queued: float = 0.0


@dataclass
class PendingPlan:
    id: int
    actions: list[A.Action]
    created: float
    findings: tuple[Finding, ...] = ()  # those the plan rests on


@dataclass
class _Ledger:
    """What the migration rails count, once per pass over the queue instead of once per action: running
    migrations in all and touching each host, memory heading to each host, memory committed, and the
    hosts' and VMs' CPU (a pass may start thousands of migrations: a consolidation round)."""

    moving: int
    touching: np.ndarray  # per host: running migrations from or to it
    incoming: np.ndarray  # per host: MiB of the VMs migrating to it
    committed: np.ndarray  # per host: MiB of its VMs
    util: np.ndarray | None
    cores: np.ndarray | None

    @classmethod
    def of(cls, running: list[_Job], knowledge: Knowledge) -> _Ledger:
        snap = knowledge.latest
        hosts = len(snap.hosts)
        moving = [j.action for j in running if isinstance(j.action, A.Migrate)]
        ledger = cls(
            len(moving),
            np.zeros(hosts, dtype=np.int64),
            np.zeros(hosts),
            snap.committed_memory(),
            knowledge.host_cpu_util(LOAD_WINDOW),
            knowledge.vm_cpu_cores(LOAD_WINDOW),
        )
        # a running migration whose VM or host the snapshot lacks (a host that stopped reporting) still
        # counts against the cluster's cap, but touches no host the snapshot holds
        for m in moving:
            if m.vm in snap.vm_position and m.dst in snap.host_position:
                ledger.add(m, snap, count=False)
        return ledger

    def add(self, m: A.Migrate, snap: Snapshot, count: bool = True) -> None:
        v, dst = snap.vm_position[m.vm], snap.host_position[m.dst]
        src = int(snap.vm_host[v])
        self.moving += count
        self.touching[dst] += 1
        if src != dst:
            self.touching[src] += 1
        self.incoming[dst] += snap.vm_memory[v]

    def memory_short(self, snap: Snapshot, vm: str, host: str) -> str | None:
        """Why `host` lacks the memory for `vm` (its VMs' and those heading to it counted), or None."""
        h, v = snap.host_position[host], snap.vm_position[vm]
        free = snap.host_memory[h] - self.committed[h] - self.incoming[h]
        return (
            f"{host} has {free:.0f} MiB free; {vm} needs {snap.vm_memory[v]:.0f} MiB"
            if free < snap.vm_memory[v]
            else None
        )


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
        self.settled: list[tuple[A.Action, A.Outcome]] = []  # actions that ended, for their policies to see
        self._seq = 0

    def _record(self, now: float, plan: int, event: str, action: A.Action, outcome: A.Outcome | None = None) -> None:
        """Audit an event; an action that ended (finished, rejected, expired, failed or done at once) is also
        kept in ``settled`` until the runtime hands it to its policy."""
        self.audit.record(now, plan, event, action, outcome)
        if outcome is not None and (event in _ENDINGS or (event == "applied" and outcome.status != A.RUNNING)):
            self.settled.append((action, outcome))

    # ---------------------------------------------------------------- plans
    def submit(
        self,
        actions: list[A.Action],
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
        self._seq += 1
        now = self.driver.now()
        behind = findings.behind(actions, knowledge.latest) if findings is not None else ()
        for f in behind:
            self.audit.record_finding(now, self._seq, actions[0].policy, f)
        for a in actions:
            self._record(now, self._seq, "proposed", a)
        if lost:
            for a in actions:
                if id(a) in lost:
                    self._record(now, self._seq, "rejected", a, A.Outcome(A.REJECTED, lost[id(a)], now, now))
            actions = [a for a in actions if id(a) not in lost]
        if self.mode == "dry-run":
            for a in actions:
                verdict = self.check(a, knowledge)
                msg = f"not applied (dry run); rails: {verdict or 'would pass'}"
                self._record(now, self._seq, "dry-run", a, A.Outcome(A.DRY_RUN, msg, now, now))
        elif self.mode == "approve":
            self.pending[self._seq] = PendingPlan(self._seq, list(actions), now, behind)
            for a in actions:
                self._record(now, self._seq, "pending", a, A.Outcome(A.PENDING, "waiting for approval", now))
        else:
            self.queued.extend(_Job(self._seq, a, patient=patient, queued=now) for a in actions)
            self._start_ready(knowledge)
        return self._seq

    def resume(self, plan_id: int, action: A.Action, running: bool) -> None:
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

    def in_flight(self) -> list[tuple[A.Action, bool]]:
        """The actions in hand, each with whether it has started (the rest wait in the queue)."""
        return [(j.action, True) for j in self.running] + [(j.action, False) for j in self.queued]

    def preempt(self, action: A.Action, why: str) -> None:
        """Drop a queued action (recorded as rejected, with why) for another policy's of a higher priority."""
        now = self.driver.now()
        for job in [j for j in self.queued if j.action is action]:
            self.queued.remove(job)
            self._record(now, job.plan, "rejected", action, A.Outcome(A.REJECTED, why, now, now))

    def drop_queued(self, plan_id: int, why: str) -> int:
        """Drop a plan's actions that have not started (recorded as rejected); how many."""
        now = self.driver.now()
        dropped = [job for job in self.queued if job.plan == plan_id]
        self.queued = [job for job in self.queued if job.plan != plan_id]
        for job in dropped:
            self._record(now, plan_id, "rejected", job.action, A.Outcome(A.REJECTED, why, now, now))
        return len(dropped)

    def approve(self, plan_id: int, knowledge: Knowledge) -> None:
        plan = self._take_pending(plan_id)
        now = self.driver.now()
        for a in plan.actions:
            self._record(now, plan_id, "approved", a, A.Outcome(A.OK, "approved by operator", now))
        self.queued.extend(_Job(plan_id, a) for a in plan.actions)
        self._start_ready(knowledge)

    def reject(self, plan_id: int, why: str = "rejected by operator") -> None:
        plan = self._take_pending(plan_id)
        now = self.driver.now()
        for a in plan.actions:
            self._record(now, plan_id, "rejected", a, A.Outcome(A.REJECTED, why, now, now))

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
            if out.status == A.RUNNING:
                if now - job.started > self.rails.action_timeout:
                    if self.driver.cancel(job.action).status == A.RUNNING:  # cannot be stopped (post-copy)
                        still.append(job)
                        continue
                    msg = f"no result after {self.rails.action_timeout:g} s; cancelled"
                    self._record(now, job.plan, "finished", job.action, A.Outcome(A.TIMEOUT, msg, job.started, now))
                    continue
                still.append(job)
                continue
            if isinstance(job.action, A.Migrate) and out.status == A.OK:
                self.last_migrated[job.action.vm] = now
            self._record(now, job.plan, "finished", job.action, out)
        self.running = still
        for pid in [p for p, plan in self.pending.items() if now - plan.created > self.rails.approval_timeout]:
            for a in self.pending.pop(pid).actions:
                msg = f"not approved within {self.rails.approval_timeout:g} s"
                self._record(now, pid, "expired", a, A.Outcome(A.EXPIRED, msg, now, now))
        self._start_ready(knowledge)

    def _start_ready(self, knowledge: Knowledge) -> None:
        """Start queued actions in order; one at a time per target; a rejection drops its plan's
        later actions on the same target (they depended on it)."""
        now = self.driver.now()
        busy = {j.action.target for j in self.running}
        plugging = self._plugging(knowledge.latest) if self.queued and len(knowledge) else None
        ledger = _Ledger.of(self.running, knowledge) if plugging is not None else None
        blocked: set[tuple[int, str]] = set()
        keep = []
        for job in self.queued:
            key = (job.plan, job.action.target)
            if key in blocked:
                why = A.Outcome(A.REJECTED, "an earlier action of its plan on the same target was rejected", now, now)
                self._record(now, job.plan, "rejected", job.action, why)
                continue
            if job.action.target in busy:
                keep.append(job)
                continue
            verdict = self.check(job.action, knowledge, plugging, ledger, job.plan)
            if isinstance(verdict, Busy) and job.patient and now - job.queued < self.rails.action_timeout:
                keep.append(job)
                busy.add(job.action.target)  # its plan's later actions on the VM wait behind it
                continue
            if verdict:
                details = {"not_now": True} if isinstance(verdict, Busy) else {}  # a cap or the headroom: try later
                self._record(now, job.plan, "rejected", job.action, A.Outcome(A.REJECTED, verdict, now, now, details))
                blocked.add(key)
                continue
            out = self.driver.apply(job.action)
            self._record(now, job.plan, "applied", job.action, out)
            if out.status == A.RUNNING:
                job.started = now
                self.running.append(job)
                if isinstance(job.action, A.AttachVF):  # the snapshot shows it only from the next one on
                    snap = knowledge.latest
                    plugging[snap.vm_host[snap.vm_position[job.action.vm]]] += 1
                if isinstance(job.action, A.Migrate):
                    ledger.add(job.action, knowledge.latest)
                elif isinstance(job.action, A.RestartVM):  # the next restarts of the pass count its memory
                    snap = knowledge.latest
                    ledger.incoming[snap.host_position[job.action.host]] += snap.vm_memory[
                        snap.vm_position[job.action.vm]
                    ]
                busy.add(job.action.target)
            elif out.status != A.OK:
                blocked.add(key)
        self.queued = keep

    # ---------------------------------------------------------------- rails
    def check(
        self,
        action: A.Action,
        knowledge: Knowledge,
        plugging: np.ndarray | None = None,
        ledger: _Ledger | None = None,
        plan: int | None = None,
    ) -> str | None:
        """Why the action may not start now, or None if it may. `plugging`: VF hot-plugs per host the
        snapshot does not show yet, and `ledger` the running migrations, if the caller keeps count (else
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
        if isinstance(action, (A.Migrate, A.CreateVM, A.RestartVM)) and knowledge.rules:
            broken = self._check_rules(action, knowledge, plan)
            if broken:
                return broken
        if isinstance(action, A.Migrate):
            return self._check_migrate(action, knowledge, ledger or _Ledger.of(self.running, knowledge))
        if isinstance(action, A.SetHostPower) and action.state != "on":
            h = snap.host_position[action.host]
            ledger = ledger or _Ledger.of(self.running, knowledge)
            if ledger.committed[h] > 0 or ledger.incoming[h] > 0:
                return f"{action.host} has VMs (or one migrating to it); only an empty host can go to {action.state}"
        if isinstance(action, A.RestartVM):
            return (ledger or _Ledger.of(self.running, knowledge)).memory_short(snap, action.vm, action.host)
        if isinstance(action, A.AttachVF):
            v = snap.vm_position[action.vm]
            h = int(snap.vm_host[v])
            if snap.vm_migrating[v]:
                return f"{action.vm} is migrating"
            if snap.vm_nic[v] != "vnic":
                return f"{action.vm} NIC is {snap.vm_nic[v]!r}, not a plain vNIC"
            plugging = self._plugging(snap) if plugging is None else plugging
            if snap.vfs_used[h] + plugging[h] >= snap.vfs_total[h]:
                return f"{snap.hosts[h]} has no free VF ({snap.vfs_total[h]} in all)"
        return None

    def _check_rules(
        self, action: A.Migrate | A.CreateVM | A.RestartVM, knowledge: Knowledge, plan: int | None
    ) -> str | None:
        """The must rule the action would break, said with the VM and host, or None."""
        snap = knowledge.latest
        host = action.dst if isinstance(action, A.Migrate) else action.host
        if host not in snap.host_position:
            return None  # said by the other rails
        bound = knowledge.rules.bind(snap.vms, snap.hosts)
        if not bound.rules_of(action.vm):
            return None
        heading = {}
        for job in [*self.running, *(j for j in self.queued if j.plan == plan and j.action is not action)]:
            m = job.action
            if not isinstance(m, (A.Migrate, A.RestartVM)) or m.vm not in snap.vm_position:
                continue
            going = m.dst if isinstance(m, A.Migrate) else m.host
            if going in snap.host_position:
                heading[snap.vm_position[m.vm]] = snap.host_position[going]
        rule = bound.breaking(action.vm, snap.host_position[host], snap.vm_host, heading)
        return None if rule is None else f"{action.vm} on {host} would break {rule.describe()}"

    def _silent(self, snap: Snapshot, action: A.Action) -> str | None:
        """Why the action may not act on a host now: the host (the VM's, or the one it names) has not
        reported for three monitor periods (a sensor gap, or a failure not declared yet), so what it shows
        is old. A restart acts on the host it boots the VM on only: its VM's host is the failed one."""
        if snap.host_seen is None:
            return None
        hosts = [getattr(action, "host", None), getattr(action, "dst", None)]
        if getattr(action, "vm", None) is not None and not isinstance(action, A.RestartVM):
            hosts.append(snap.hosts[snap.vm_host[snap.vm_position[action.vm]]])
        for host in hosts:
            if host is None or host not in snap.host_position:
                continue
            quiet = snap.time - snap.host_seen[snap.host_position[host]]
            if quiet > 3 * self.rails.monitor_period + 1e-9:
                return f"{host} has not reported for {quiet:g} s"
        return None

    def _plugging(self, snap: Snapshot) -> np.ndarray:
        """Per host, the VF hot-plugs this executor has running that the snapshot does not show yet (a VM
        still on its vNIC: once it shows 'attaching', vfs_used counts its VF)."""
        vms = [snap.vm_position.get(j.action.vm) for j in self.running if isinstance(j.action, A.AttachVF)]
        hosts = [snap.vm_host[v] for v in vms if v is not None and snap.vm_nic[v] == "vnic"]
        return np.bincount(np.array(hosts, dtype=np.int64), minlength=len(snap.hosts))

    def _check_migrate(self, action: A.Migrate, knowledge: Knowledge, ledger: _Ledger) -> str | None:
        snap = knowledge.latest
        now = self.driver.now()
        if action.dst not in snap.host_position:
            return f"no host named {action.dst!r}"
        v, dst = snap.vm_position[action.vm], snap.host_position[action.dst]
        src = int(snap.vm_host[v])
        if src == dst:
            return f"{action.vm} already runs on {action.dst}"
        if snap.vm_migrating[v]:
            return f"{action.vm} is already migrating"
        if snap.vm_nic[v] != "vnic":
            return f"{action.vm} has an SR-IOV VF ({snap.vm_nic[v]}); detach it first"
        last = self.last_migrated.get(action.vm)
        if last is not None and now - last < self.rails.hold_down:
            return f"{action.vm} was migrated {now - last:.0f} s ago; hold-down is {self.rails.hold_down:g} s"
        if ledger.moving >= self.rails.max_migrations_cluster:
            return Busy(f"{ledger.moving} migrations already running (cluster cap {self.rails.max_migrations_cluster})")
        for h in (src, dst):
            touching = int(ledger.touching[h])
            if touching >= self.rails.max_migrations_per_host:
                cap = self.rails.max_migrations_per_host
                return Busy(f"{snap.hosts[h]} already has {touching} migration(s) (per-host cap {cap})")
        short = ledger.memory_short(snap, action.vm, action.dst)
        if short:
            return short
        if ledger.util is not None and ledger.cores is not None:
            after = ledger.util[dst] + ledger.cores[v] / snap.host_cores[dst]
            if after > self.rails.cpu_headroom:  # not now: load changes (a patient plan waits for it to fall)
                return Busy(f"{action.dst} would be at {after:.0%} CPU (headroom {self.rails.cpu_headroom:.0%})")
        return None
