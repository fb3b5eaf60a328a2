"""The admission stage: VMs that ask to run are created where the profile's admission policy says.

It runs at every tick of the loop (a request should not wait for a policy period), on a fresh
observation (a VM created a moment ago must count). A request no host can take waits, and a host
asleep or off with room is woken for it; the audit log says so once per VM, not at every tick, as it
says once per VM and host that the host refused it (and once per host that it could not be woken).
"""

from __future__ import annotations

from sova.control.audit import AuditLog
from sova.drivers.base import Driver
from sova.model.actions import OK, CreateVM
from sova.model.knowledge import Knowledge
from sova.plan.admission_policies import AdmissionPolicy


class Admission:
    def __init__(self, driver: Driver, policy: AdmissionPolicy, audit: AuditLog):
        self.driver = driver
        self.policy = policy
        self.audit = audit
        self._told: set = set()  # VMs said to wait, and (VM, host) pairs said refused

    def tick(self, knowledge: Knowledge) -> None:
        requests = self.driver.requests()
        if not requests or not len(knowledge):
            return
        now = self.driver.now()
        # what the hosts hold now, not at the last monitor reading: VMs created since would not show
        snapshot = self.driver.observe()
        proposed = set()
        for action in self.policy.admit(snapshot, requests, knowledge):
            outcome = self.driver.apply(action)
            if isinstance(action, CreateVM):
                proposed.add(action.vm)
                told = (action.vm, action.host)
            else:  # a host woken for requests: they are placed once it is on
                told = ("wake", action.host)
            if outcome.status == OK:
                self.audit.record(now, 0, "applied", action, outcome)
            elif told not in self._told:  # refused: said once, tried again later
                self._told.add(told)
                self.audit.record(now, 0, "failed", action, outcome)
        for request in requests:
            if request.name not in proposed and request.name not in self._told:
                self._told.add(request.name)
                waiting = CreateVM(
                    request.name, "", policy=self.policy.name, reason="no host that is on has room for it"
                )
                self.audit.record(now, 0, "waiting", waiting)
