"""The MAPE-K loop on any driver's clock: monitor, analyze + plan (policies), execute.

``tick()`` is called by whoever owns the clock (the experiment runner after each simulator step, or
a wall-clock loop for real hosts). Sensors are read every ``monitor_period``; VMs that ask to run are
placed by the admission policy at every tick; each policy runs at its own period, first its analyzers
(the Analyze stage: an analyzer that several policies due at the same tick ask for with the same settings
runs once), then its plan on their findings; the executor advances running actions at every tick. A fast
controller (``CONTROLLER``: the IO controllers) runs at its own epoch too, and sets its throttles at once;
the VMs it holds are claims in the arbiter whenever another policy wants to set their IO limits.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sova.analyze.base import AnalyzeStage
from sova.analyze.base import registry as analyzer_registry
from sova.analyze.findings import Findings
from sova.control.admission import Admission
from sova.control.arbiter import Claim, IoControl, Verdict, arbitrate
from sova.control.audit import AuditLog
from sova.control.executor import Executor
from sova.drivers.base import Driver
from sova.model.actions import OK, FenceHost, Outcome
from sova.model.knowledge import Knowledge
from sova.model.placement_rules import (
    RuleBook,
    failure_rule,
    fenced_rule,
    hosts_failed,
    hosts_fenced,
    hosts_in_maintenance,
    maintenance_rule,
)
from sova.model.scenario import ControlSpec, TopologySpec
from sova.plan.admission_policies import AdmissionPolicy
from sova.plan.base import CONTROLLER, PLANNER, Policy, controllers
from sova.plan.first_fit import FirstFit
from sova.plan.ha_restart import HaRestart
from sova.plan.keep_rules import KeepRules
from sova.plan.storage.io_control import IoController

OUTCOMES_KEPT = 1000  # per policy, until its next round


class Runtime:
    def __init__(
        self,
        driver: Driver,
        policies: list[Policy],
        control: ControlSpec,
        mode: str = "auto",
        topology: TopologySpec | None = None,
        admission: AdmissionPolicy | None = None,
        audit: AuditLog | None = None,
        knowledge: Knowledge | None = None,
        rules: RuleBook | None = None,
        keeper: bool = True,
    ):
        """knowledge: what was observed before (a standby manager's, as it takes the lead); None: nothing.
        rules: the placement rules in force (they then replace the Knowledge's). keeper: run the global
        loop's duties unless the policies hold them already: ``keep-rules`` (it moves the VMs that break a
        must rule, a drained host's too) and ``ha-restart`` (it boots a failed host's VMs elsewhere)."""
        self.driver = driver
        for duty in (KeepRules, HaRestart) if keeper else ():
            if not any(isinstance(p, duty) for p in policies):
                policies = [*policies, duty(**duty.defaults())]
        self.policies = policies
        for pol in policies:  # who binds whom: the extension points of the others (docs/policies.md)
            others = [o for o in policies if o is not pol and o.extends()]
            pol.peers = [o for o in others if o.rank >= pol.rank]
            pol.scorers = others
        self._order = {pol.name: i for i, pol in reversed(list(enumerate(policies)))}
        self._rank = {pol.name: pol.rank for pol in reversed(policies)}
        self.control = control
        self.knowledge = knowledge if knowledge is not None else Knowledge(control.history, topology)
        self.knowledge.history = max(self.knowledge.history, _history_read(policies))
        if rules is not None:
            self.knowledge.rules = rules
        self.audit = audit or AuditLog()
        self.findings: dict[str, Findings] = {}  # each policy's findings at its latest round, by policy name
        self.executor = Executor(driver, control, mode, self.audit)
        self.admission = Admission(driver, admission or FirstFit(), self.audit)
        start = driver.now()
        seen = self.knowledge.latest.time + control.monitor_period if len(self.knowledge) else start
        self._next_monitor = max(start, seen)
        self._next_run = [start + p.period for p in policies]
        self._rounds = {PLANNER: self._plan, CONTROLLER: self._control}  # how each kind of policy is driven
        self._controllers = controllers(policies)
        self._released: dict[str, set[str]] = {}  # per controller, the VMs a higher priority took from it
        self._taking: dict[str, tuple[str, str]] = {}  # VM -> (its controller, why) while another's action runs
        self.on_fenced: Callable[[str, str | None], None] = lambda host, by: None  # fenced (by whom), or no more

    def tick(self) -> bool:
        """One tick; whether a policy planned in it (a decision round)."""
        now = self.driver.now()
        decided = False
        if now + 1e-9 >= self._next_monitor:
            self.knowledge.add(self.driver.observe())
            self._next_monitor = now + self.control.monitor_period
            self._watch_reports()
        self.admission.tick(self.knowledge)
        analysis = AnalyzeStage(self.knowledge)  # the policies due now see one Knowledge: each finding once
        plans: list[tuple[Policy, list, object]] = []
        for i, pol in enumerate(self.policies):
            if now + 1e-9 >= self._next_run[i]:
                self._next_run[i] += pol.period * max(1, int((now - self._next_run[i]) // pol.period) + 1)
                planned = self._rounds[pol.kind](pol, analysis, now)
                if planned is not None:
                    decided = True
                    plans.append(planned)
        self._submit(plans)
        if len(self.knowledge):
            self.executor.tick(self.knowledge)
        self._hand_back_outcomes()
        return decided

    def _plan(self, policy: Policy, analysis: AnalyzeStage, now: float) -> tuple[Policy, list, Findings] | None:
        """A planner's round: its analyzers' findings, then its plan on them (None: it skips this round)."""
        if not len(self.knowledge) or not policy.wants_to_run(self.knowledge):
            return None
        findings = analysis.findings(policy.analyses())
        self.findings[policy.name] = findings
        planned = (policy, policy.plan(self.knowledge, findings), findings)
        policy.outcomes.clear()  # it has seen them
        for target, text in policy.notes:
            self.audit.record_note(now, policy.name, target, text)
        policy.notes.clear()
        return planned

    def _submit(self, plans: list[tuple[Policy, list, object]]) -> None:
        """The plans of the policies due in this tick, their conflicts with each other and with the actions
        in the executor's hands settled by priority (control/arbiter.py), each loser recorded with why."""
        wanted = [self._claim(a) for _, plan, _ in plans for a in plan]
        held = [self._claim(a, running, not running) for a, running in self.executor.in_flight()] if wanted else []
        held += self._io_holds(wanted)
        verdict = Verdict({}, [])
        if len({c.policy for c in wanted} | {c.policy for c in held}) > 1:  # else nothing can conflict
            verdict = arbitrate(wanted, held)
        for claim, why in verdict.preempted:
            if isinstance(claim.action, IoControl):  # the VM goes if the winner's action is carried out
                self._taking[claim.action.vm] = (claim.action.policy, why)
            else:
                self.executor.preempt(claim.action, why)
        lost = {**verdict.lost, **self._bound_by_peers(plans)}
        for pol, plan, findings in plans:
            self.executor.submit(plan, self.knowledge, findings, patient=pol.patient, lost=lost)

    def _bound_by_peers(self, plans: list[tuple[Policy, list, object]]) -> dict[int, str]:
        """The planned actions a peer's extension point forbids (by identity, with why): a VM moved that a
        peer pins, or put on a host a peer's filter keeps it off. This binds every policy, whether or not it
        asked ``HostFilter`` while it planned (one that did proposes none of these)."""
        refused: dict[int, str] = {}
        if not any(plan for _, plan, _ in plans):
            return refused
        snap = self.knowledge.latest
        pinned_by: dict[str, dict[str, str]] = {}  # each peer's pins, asked once a tick
        for pol, plan, _ in plans:
            placing = [a for a in plan if a.placed_on in snap.host_position and a.vm in snap.vm_position]
            if not placing or not pol.peers:
                continue
            pins: dict[str, str] = {}
            for peer in (p for p in pol.peers if p.defines("pinned") and any(a.moves_vm for a in placing)):
                if peer.name not in pinned_by:
                    pinned_by[peer.name] = peer.pinned(self.knowledge)
                for vm, why in pinned_by[peer.name].items():
                    pins.setdefault(vm, f"{vm} is pinned by {peer.name}: {why}")
            filters = [peer for peer in pol.peers if peer.defines("filter_hosts")]
            for action in placing:
                why = pins.get(action.vm) if action.moves_vm else None
                why = why or _filtered_out(filters, self.knowledge, action)
                if why:
                    refused[id(action)] = why
        return refused

    def _io_holds(self, wanted: list[Claim]) -> list[Claim]:
        """Each controller's hold on the VMs whose IO limits another policy wants to set now, as a claim
        waiting in the executor's hands: a new action of a strictly higher priority takes the VM from the
        controller, and any other loses to it."""
        asked = {claim.action.vm for claim in wanted if claim.action.sets_io} - set(self._taking)
        holds = []
        for controller in self._controllers if asked else ():
            kept = asked.intersection(controller.vms) - self._released.get(controller.name, set())
            holds += [self._claim(IoControl(vm, policy=controller.name), queued=True) for vm in sorted(kept)]
        return holds

    def _settle_takeovers(self) -> None:
        """A controller gives up a VM once the action that won it from a policy of higher priority was
        carried out (it sets no throttle there again; the audit log says so); if that action ended any other
        way (refused by the rails, rejected, expired, a dry run), the controller keeps the VM."""
        for action, outcome in self.executor.settled if self._taking else ():
            if action.sets_io and action.vm in self._taking:
                controller, why = self._taking.pop(action.vm)
                if outcome.status == OK:
                    self._released.setdefault(controller, set()).add(action.vm)
                    note = f"gives up the IO control of {action.vm}: {why}"
                    self.audit.record_note(self.driver.now(), controller, action.vm, note)

    def _claim(self, action, running: bool = False, queued: bool = False) -> Claim:
        order = self._order.get(action.policy, len(self._order))
        return Claim(action, self._rank.get(action.policy, 0), order, running, queued)

    def _hand_back_outcomes(self) -> None:
        """Each ended action's outcome to the policy that wanted it, for its next round."""
        if not self.executor.settled:
            return
        self._settle_takeovers()
        by_name = {pol.name: pol for pol in self.policies}
        for action, outcome in self.executor.settled:
            if isinstance(action, FenceHost) and outcome.status == OK:
                self.fenced(action.host, outcome.message)
            pol = by_name.get(action.policy)
            if pol is not None:
                pol.outcomes.append((action, outcome))
                del pol.outcomes[:-OUTCOMES_KEPT]  # a policy that has not run for long sees the latest
        self.executor.settled.clear()

    def drain(self, host: str, by: str = "operator") -> None:
        """Put `host` into maintenance: a must rule keeps every VM off it (so nothing is placed or migrated
        there) and ``keep-rules`` moves its VMs away at the next tick, until ``release``."""
        self._maintain(host, True, by)

    def release(self, host: str, by: str = "operator") -> None:
        """End `host`'s maintenance: it takes VMs again."""
        self._maintain(host, False, by)

    def keep_maintenance(self, hosts: list[str]) -> None:
        """Exactly `hosts` in maintenance, as a store says they were (a manager taking the lead), unaudited."""
        for host in hosts_in_maintenance(self.knowledge.rules):
            self._maintain(host, False, "", quiet=True)
        for host in hosts:
            self._maintain(host, True, "", quiet=True)

    def fenced(self, host: str, how: str) -> None:
        """A failed host is fenced (`how`: its fence action's outcome, or the operator who confirmed it is off):
        ``ha-restart`` starts its VMs elsewhere at the next tick."""
        if host not in hosts_failed(self.knowledge.rules):
            raise ValueError(f"{host} is not declared failed; only a failed host is fenced")
        if host in hosts_fenced(self.knowledge.rules):
            return
        self.knowledge.rules = self.knowledge.rules.with_rule(fenced_rule(host))
        self.audit.record_note(self.driver.now(), "fencing", host, f"{host} fenced: {how}")
        self.on_fenced(host, how)
        self._run_now(HaRestart)

    def keep_fenced(self, hosts: list[str]) -> None:
        """Exactly `hosts` failed and fenced, as a store says they were (a manager taking the lead), unaudited:
        a host fenced stays so until it reports again."""
        for host in hosts:
            rules = self.knowledge.rules
            if host not in hosts_failed(rules):
                rules = rules.with_rule(failure_rule(host))
            if host not in hosts_fenced(rules):
                rules = rules.with_rule(fenced_rule(host))
            self.knowledge.rules = rules

    def _maintain(self, host: str, drain: bool, by: str, quiet: bool = False) -> None:
        rule = maintenance_rule(host)
        rules = self.knowledge.rules
        self.knowledge.rules = rules.with_rule(rule) if drain else rules.without(rule.name)
        if quiet:
            return
        now = self.driver.now()
        text = f"{host} {'put into' if drain else 'released from'} maintenance by {by}"
        self.audit.record_note(now, "maintenance", host, text)
        self._run_now(KeepRules)  # it moves the VMs off at the next tick

    def _watch_reports(self) -> None:
        """Declare failed a host that has not reported for ``failure_grace`` seconds (a must rule keeps every
        VM off it, and ``ha-restart`` boots its VMs elsewhere), and take it back when it reports again."""
        snap = self.knowledge.latest
        if snap.host_seen is None:
            return
        silent = {snap.hosts[h] for h in np.flatnonzero(snap.time - snap.host_seen > self.control.failure_grace)}
        failed = set(hosts_failed(self.knowledge.rules))
        for host in sorted(silent - failed):
            self.knowledge.rules = self.knowledge.rules.with_rule(failure_rule(host))
            seen = float(snap.host_seen[snap.host_position[host]])
            text = f"{host} declared failed: no report since {seen:g} s ({snap.time - seen:g} s)"
            self.audit.record_note(snap.time, "failure", host, text)
            self._run_now(HaRestart)
        for host in sorted(failed - silent):
            self.knowledge.rules = self.knowledge.rules.without(failure_rule(host).name)
            if host in hosts_fenced(self.knowledge.rules):
                self.knowledge.rules = self.knowledge.rules.without(fenced_rule(host).name)
                self.on_fenced(host, None)
            self.audit.record_note(snap.time, "failure", host, f"{host} reports again")

    def _run_now(self, kind: type) -> None:
        """The policies of this kind run at the next tick."""
        for i, pol in enumerate(self.policies):
            if isinstance(pol, kind):
                self._next_run[i] = self.driver.now()

    def _control(self, controller: IoController, analysis: AnalyzeStage, now: float) -> None:
        """One epoch of an IO controller: its VMs' counters in, their throttles out, its events audited."""
        if not controller.vms:
            return None  # not bound, or no VM under an SLO
        throttle = controller.control(self.driver.io_sample(controller.vms))
        released = self._released.get(controller.name, set())
        if throttle is not None and released:
            throttle = throttle.without(released)
        if throttle is not None:
            self.driver.set_io_throttle(throttle)
        now = self.driver.now()  # after the epoch's calls to the hosts
        for action in (e for e in controller.events if getattr(e, "vm", None) not in released):
            self.audit.record(now, 0, "applied", action, Outcome(OK, "applied by the controller", now, now))
        controller.events.clear()


def _filtered_out(filters: list[Policy], knowledge: Knowledge, action) -> str | None:
    """Why a peer's filter keeps the action's VM off the host it puts it on, or None."""
    snap = knowledge.latest
    host = snap.host_position[action.placed_on]
    one = np.zeros(len(snap.hosts), dtype=bool)
    one[host] = True
    for peer in filters:
        kept = peer.filter_hosts(knowledge, snap.vm_position[action.vm], one)
        if kept is not None and not kept[host]:
            return f"{peer.name} keeps {action.vm} off {action.placed_on}"
    return None


def _history_read(policies: list[Policy]) -> float:
    """The seconds of history the policies' analyzers read back (0: none asks for more than usual)."""
    analyzers = analyzer_registry()
    return max((analyzers[name].span(settings) for pol in policies for name, settings in pol.analyses()), default=0.0)
