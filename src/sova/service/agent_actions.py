"""The agent's side of actions: each action id applied at most once, each outcome sent until the bus has it.

An action is recorded in the agent's ledger before it is acknowledged to the bus and before the driver
applies it. So a redelivered action (the agent restarted before acknowledging it) is never applied again;
an action the agent was applying when it stopped ends as failed ("interrupted"), because whether the
driver carried it out is unknown, and the manager re-observes. An action that arrives after its expiry
(the agent was away) is refused, never started: the manager planned it for another moment. A long action (a migration) is polled on
the agent's steps until it ends. Driver calls run on the agent's own thread, between its bus steps.
"""

from __future__ import annotations

import json
import logging
import time

from sova.drivers.base import Driver
from sova.model.actions import FAILED, REJECTED, Action, Outcome
from sova.model.actions import RUNNING as ACTION_RUNNING
from sova.service.bus import Bus, action_consumer, action_subject, outcome_subject
from sova.service.ledger import FINISHED, RUNNING, STARTED, Ledger
from sova.service.wire import WireError, decode_action, decode_envelope, encode_outcome

log = logging.getLogger(__name__)
INTERRUPTED = "interrupted: the agent stopped while applying it, so it is not applied again (at most once)"
EXPIRED = "expired before the agent could start it; not applied"
KEEP = 7 * 86400.0  # s an agent remembers a finished action: far past any action's expiry


class ActionAgent:
    def __init__(self, bus: Bus, host: str, driver: Driver, ledger: Ledger, ack_wait: float = 30.0):
        """ack_wait: how long the bus waits for this agent to take an action before it delivers it again."""
        self.bus, self.host, self.driver, self.ledger, self.ack_wait = bus, host, driver, ledger, ack_wait
        self.running: dict[str, Action] = {}  # long actions the driver is carrying out, by id
        self.applied = 0  # actions handed to the driver by this agent
        self.reader = None

    async def start(self) -> None:
        """Attach to this host's actions, settle what an earlier run of the agent left unfinished, and
        forget what finished more than a week ago (`KEEP`)."""
        self.ledger.prune(KEEP)
        self.reader = await self.bus.reader(action_subject(self.host), action_consumer(self.host), self.ack_wait)
        for entry in self.ledger.unfinished(STARTED):
            self._finish(entry.action_id, Outcome(FAILED, INTERRUPTED))
        for entry in self.ledger.unfinished(RUNNING):
            self.running[entry.action_id] = decode_action(entry.action)[1]
        await self._publish_pending()

    async def step(self, wait: float = 0.5) -> int:
        """Take the actions that arrive within `wait` seconds, poll the long ones, send the outcomes."""
        try:
            messages = await self.reader.fetch(batch=32, timeout=wait)
        except TimeoutError:  # nothing arrived
            messages = []
        for message in messages:
            await self._take(message)
        self._poll_running()
        await self._publish_pending()
        return len(messages)

    async def _take(self, message) -> None:
        try:
            action_id, action, expires = decode_envelope(message.data)
        except WireError as err:
            action_id = _id_of(message.data)
            log.warning("refused an action%s: %s", f" ({action_id})" if action_id else "", err)
            if action_id and self.ledger.begin(action_id, message.data) is None:
                self._finish(action_id, Outcome(REJECTED, f"not a well-formed action: {err}"))
            await message.term()  # never deliver it again
            return
        before = self.ledger.begin(action_id, message.data)
        try:
            await message.ack()
        except Exception as err:  # the bus delivers it again; the ledger then applies nothing
            log.warning("could not acknowledge %s: %s", action_id, err or type(err).__name__)
        if before is not None:  # sent again: apply nothing; its outcome goes out (again) once it has one
            if before.state == FINISHED:
                self.ledger.republish(action_id)
            return
        late = time.time() - expires if expires is not None else 0.0
        if late > 0:  # it waited too long (this agent was away): the manager planned for another moment
            self._finish(action_id, Outcome(REJECTED, f"{EXPIRED} ({late:.0f} s after it expired)"))
            return
        self.applied += 1
        try:
            outcome = self.driver.apply(action)
        except Exception as err:  # a driver fault ends the action, never the agent
            outcome = Outcome(FAILED, f"the driver failed: {err}")
        if outcome.status == ACTION_RUNNING:
            self.ledger.running(action_id)
            self.running[action_id] = action
        else:
            self._finish(action_id, outcome)

    def _poll_running(self) -> None:
        for action_id, action in list(self.running.items()):
            try:
                outcome = self.driver.poll(action)
            except Exception as err:  # a driver that no longer knows it (restarted) cannot say how it ended
                outcome = Outcome(FAILED, f"{INTERRUPTED} ({err})")
            if outcome.status != ACTION_RUNNING:
                del self.running[action_id]
                self._finish(action_id, outcome)

    def _finish(self, action_id: str, outcome: Outcome) -> None:
        self.ledger.finish(action_id, encode_outcome(action_id, outcome))

    async def _publish_pending(self) -> None:
        """Send every finished outcome the bus has not stored yet (the bus drops an id it already has)."""
        for entry in self.ledger.unpublished():
            await self.bus.publish(outcome_subject(self.host), f"outcome-{entry.action_id}", entry.outcome)
            self.ledger.published(entry.action_id)


def _id_of(payload: bytes) -> str | None:
    """The id of a message that is not a well-formed action, if it has one."""
    try:
        raw = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    action_id = raw.get("id") if isinstance(raw, dict) else None
    return action_id if isinstance(action_id, str) and action_id else None
