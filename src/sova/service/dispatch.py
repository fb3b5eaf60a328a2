"""The manager's side of actions: send each with an id to its host's agent, and collect every outcome.

Outcomes are read through the manager's durable consumer and acknowledged once recorded, so an outcome
sent while the manager was down reaches it when it returns. Sending an id again (after a restart of the
manager, not knowing whether the bus stored it) is stored once by the bus and applied once by the agent.
"""

from __future__ import annotations

import logging
import uuid

from sova.model import actions as A
from sova.service.bus import Bus, action_subject
from sova.service.wire import WireError, decode_outcome, encode_action

log = logging.getLogger(__name__)


class ActionDispatch:
    def __init__(self, bus: Bus, durable: str = "manager"):
        self.bus, self.durable = bus, durable
        self.outcomes: dict[str, A.Outcome] = {}  # what came of each action, by id
        self.reader = None

    async def start(self) -> None:
        self.reader = await self.bus.reader("sova.outcome.*", durable=self.durable)

    async def send(self, host: str, action: A.Action, action_id: str | None = None) -> str:
        """Send an action to a host's agent; its id (a new one unless given: give the same to send again)."""
        action_id = action_id or uuid.uuid4().hex
        await self.bus.publish(action_subject(host), action_id, encode_action(action_id, action))
        return action_id

    async def collect(self, wait: float = 0.5) -> list[tuple[str, A.Outcome]]:
        """The outcomes that arrive within `wait` seconds, recorded before they are acknowledged."""
        try:
            messages = await self.reader.fetch(batch=64, timeout=wait)
        except TimeoutError:
            return []
        arrived = []
        for message in messages:
            try:
                action_id, outcome = decode_outcome(message.data)
            except WireError as err:
                log.warning("dropped a malformed outcome on %s: %s", message.subject, err)
                await message.term()
                continue
            self.outcomes[action_id] = outcome
            arrived.append((action_id, outcome))
            await message.ack()
        return arrived
