"""The manager's driver: the cluster as the agents report it, and actions sent to them over the bus.

``observe`` is the merge of the fresh host reports; ``now`` is the cluster's clock (the newest report's
time, never going back); ``apply`` puts an action, under its plan's id, in the outbox that the manager
sends after each round (recorded in the state store first) and says it is running; ``poll`` says how it
ended once the agent's outcome came. A sent action cannot be called back: ``cancel`` leaves it running
(the executor keeps polling), since only the agent knows whether it was applied. IO control is an agent's
local loop, so the manager has no IO sample to give.

An action goes to the agent of the host it acts on: its VM's (a migration's source), or the host it names
(a restart boots its VM where it names; a fence acts on the failed host itself). A fence expires after
``fence_wait`` s, and ends failed if no outcome came by then: the failed host's agent is most likely down
with it, and an operator must confirm the host is off.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from sova.model.actions import FAILED, RUNNING, Action, FenceHost, Outcome
from sova.model.io_sample import IoSample, IoThrottle
from sova.model.snapshot import Snapshot, VmRequest
from sova.service.dispatch import ActionDispatch
from sova.service.plan_book import PlanBook
from sova.service.reporting import ReportCollector


@dataclass(frozen=True)
class Outgoing:
    action_id: str
    host: str
    action: Action
    plan: int | None
    expiry: float  # s after its sending that its agent may still start it


ANSWER_MARGIN = 5.0  # s past a fence's expiry for its outcome to cross the bus


class BusDriver:
    def __init__(
        self,
        collector: ReportCollector,
        book: PlanBook,
        dispatch: ActionDispatch,
        action_expiry: float = 120.0,
        fence_wait: float = 30.0,
    ):
        """action_expiry: seconds after its sending that an agent may still start an action; fence_wait: the
        same for a fence, after which it ends failed if its agent did not answer."""
        self.collector, self.book, self.dispatch, self.action_expiry = collector, book, dispatch, action_expiry
        self.fence_wait = fence_wait
        self.outbox: list[Outgoing] = []
        self._answer_by: dict[str, float] = {}  # a fence's id -> monotonic time by which its outcome must come
        self._sending = asyncio.Lock()
        self._clock = 0.0

    def now(self) -> float:
        snap = self.collector.snapshot()
        if snap is not None:
            self._clock = max(self._clock, snap.time)
        return self._clock

    def observe(self) -> Snapshot:
        snap = self.collector.snapshot()
        if snap is None:
            raise RuntimeError("no host has reported yet")
        return replace(snap, time=self.now())  # a host gone stale must not take the clock back

    def requests(self) -> list[VmRequest]:
        return []  # VMs are created on the hosts, not through the manager (yet)

    def apply(self, action: Action) -> Outcome:
        now = self.now()
        host = self._host_of(action)
        if host is None:
            return Outcome(FAILED, f"no fresh report holds {action.target!r}; not sent", now, now)
        known = self.book.action_id(action)
        if known is None:
            return Outcome(FAILED, "an action outside any plan of this manager; not sent", now, now)
        expiry = self.fence_wait if isinstance(action, FenceHost) else self.action_expiry
        self.outbox.append(Outgoing(known[0], host, action, known[1], expiry))
        return Outcome(RUNNING, f"sent to {host}'s agent", now)

    def poll(self, action: Action) -> Outcome:
        known = self.book.action_id(action)
        outcome = None if known is None else self.dispatch.outcomes.pop(known[0], None)
        if outcome is not None:
            self._answer_by.pop(known[0], None)
            return outcome
        if known is not None and time.monotonic() > self._answer_by.get(known[0], float("inf")):
            del self._answer_by[known[0]]
            now = self.now()
            return Outcome(FAILED, f"{action.target}'s agent did not answer within {self.fence_wait:g} s", now, now)
        return Outcome(RUNNING, "waiting for the agent's outcome")

    def cancel(self, action: Action) -> Outcome:
        return Outcome(RUNNING, "sent to an agent: only its outcome can end it")

    def io_sample(self, vms) -> IoSample:
        raise RuntimeError("IO control runs in the agents, next to the hypervisor, not in the manager")

    def set_io_throttle(self, throttle: IoThrottle) -> None:
        raise RuntimeError("IO control runs in the agents, next to the hypervisor, not in the manager")

    async def send(self, may_send: Callable[[], bool] = lambda: True) -> int:
        """Send what the outbox holds (each recorded before it goes), while `may_send()` (the lease) holds;
        how many. One call sends at a time; what the bus did not take stays in the outbox for the next
        call (an id sent twice is stored once)."""
        sent = 0
        async with self._sending:
            while self.outbox and may_send():
                item = self.outbox.pop(0)
                try:
                    await self.dispatch.send(
                        item.host, item.action, item.action_id, item.plan, time.time() + item.expiry
                    )
                except BaseException:
                    self.outbox.insert(0, item)
                    raise
                if isinstance(item.action, FenceHost):  # its agent's answer, if any, comes within its expiry
                    self._answer_by[item.action_id] = time.monotonic() + item.expiry + ANSWER_MARGIN
                sent += 1
        return sent

    def forget_unawaited(self) -> None:
        """Drop outcomes no action of this manager awaits (answers to a predecessor's, or sent twice)."""
        awaited = self.book.known_ids()
        for action_id in [a for a in self.dispatch.outcomes if a not in awaited]:
            del self.dispatch.outcomes[action_id]

    def _host_of(self, action: Action) -> str | None:
        """The host whose agent carries out the action: the VM's (a migration's source) or the one named."""
        snap = self.collector.snapshot()
        if snap is None:
            return None
        vm = getattr(action, "vm", None)
        if vm is not None and action.vm_host_acts:
            position = snap.vm_position.get(vm)
            return None if position is None else snap.hosts[snap.vm_host[position]]
        host = getattr(action, "host", None)
        return host if host in snap.host_position else None
