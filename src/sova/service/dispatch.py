"""The manager's side of actions: send each with an id to its host's agent, and collect every outcome.

Outcomes are read through the manager's durable consumer and acknowledged once recorded, so an outcome
sent while the manager was down reaches it when it returns; one the store could not record (the database
restarting) is handed back to the bus at once, to come again within a second (``bus.hand_back``) rather
than after the consumer's 30 s acknowledgement wait. With a state store, each action is recorded
before it is sent, so a restarted manager knows which await an outcome and sends those again: an id sent
again is stored once by the bus and applied once by the agent.
"""

from __future__ import annotations

import logging
import uuid

from sova.model.actions import Action, Outcome
from sova.service.bus import Bus, action_subject, hand_back
from sova.service.state import StateStore
from sova.service.wire import WireError, decode_outcome, encode_action

log = logging.getLogger(__name__)


class ActionDispatch:
    def __init__(self, bus: Bus, store: StateStore | None = None, durable: str = "manager"):
        """store: where each action is recorded before it is sent and each outcome before it is
        acknowledged, so that a restarted manager knows what awaits an outcome (None: in memory only)."""
        self.bus, self.store, self.durable = bus, store, durable
        self.outcomes: dict[str, Outcome] = {}  # what came of each action, by id
        self.reader = None

    async def start(self) -> None:
        self.reader = await self.bus.reader("sova.outcome.*", durable=self.durable)

    async def send(
        self,
        host: str,
        action: Action,
        action_id: str | None = None,
        plan: int | None = None,
        expires: float | None = None,
    ) -> str:
        """Send an action to a host's agent; its id (a new one unless given: give the same to send again).
        `expires`: the wall-clock time after which the agent must not start it."""
        action_id = action_id or uuid.uuid4().hex
        payload = encode_action(action_id, action, expires)
        if self.store is not None:
            self.store.record_sent(action_id, host, action.kind, payload, plan)
        await self.bus.publish(action_subject(host), action_id, payload)
        return action_id

    async def send_unanswered(self) -> int:
        """Send again, under their ids, the recorded actions no outcome has answered (after a restart the
        manager cannot tell which reached the bus); how many."""
        unanswered = self.store.unanswered() if self.store is not None else []
        for sent in unanswered:
            await self.bus.publish(action_subject(sent.host), sent.action_id, sent.action)
        return len(unanswered)

    async def collect(self, wait: float = 0.5) -> list[tuple[str, Outcome]]:
        """The outcomes that arrive within `wait` seconds, recorded before they are acknowledged."""
        try:
            messages = await self.reader.fetch(batch=64, timeout=wait)
        except TimeoutError:
            return []
        arrived = []
        for index, message in enumerate(messages):
            try:
                action_id, outcome = decode_outcome(message.data)
            except WireError as err:
                log.warning("dropped a malformed outcome on %s: %s", message.subject, err)
                await message.term()
                continue
            try:
                recorded = self.store is None or self.store.record_outcome(action_id, outcome.status, message.data)
            except Exception:  # the store away: this outcome and the rest come again shortly
                await hand_back(messages[index:])
                raise
            if not recorded:
                log.warning("an outcome for %s, which this manager did not send, on %s", action_id, message.subject)
            self.outcomes[action_id] = outcome
            arrived.append((action_id, outcome))
            await message.ack()
        return arrived
