"""The admission stage: VMs that ask to run are created where the profile's admission policy says.

It runs at every tick of the loop (a request should not wait for a policy period). A request no host
can take waits; the audit log says so once per VM, not at every tick, and again when it is placed.
"""

from __future__ import annotations

from sova.control.audit import AuditLog
from sova.drivers.base import Driver
from sova.model import actions as A
from sova.model.knowledge import Knowledge
from sova.plan.admission import AdmissionPolicy


class Admission:
    def __init__(self, driver: Driver, policy: AdmissionPolicy, audit: AuditLog):
        self.driver = driver
        self.policy = policy
        self.audit = audit
        self._told_waiting: set[str] = set()

    def tick(self, knowledge: Knowledge) -> None:
        requests = self.driver.requests()
        if not requests or not len(knowledge):
            return
        now = self.driver.now()
        placed = set()
        for action in self.policy.admit(knowledge.latest, requests):
            outcome = self.driver.apply(action)
            self.audit.record(now, 0, "applied" if outcome.status == A.OK else "failed", action, outcome)
            if outcome.status == A.OK:
                placed.add(action.vm)
                self._told_waiting.discard(action.vm)
        for request in requests:
            if request.name not in placed and request.name not in self._told_waiting:
                self._told_waiting.add(request.name)
                waiting = A.CreateVM(request.name, "", policy=self.policy.name, reason="no host has room for it")
                self.audit.record(now, 0, "waiting", waiting)
