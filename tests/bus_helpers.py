"""Helpers for tests against a real nats-server (the `nats_server` fixture is in conftest.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sova.service.bus import Bus
from sova.service.bus_users import BusUser
from sova.service.natsd import NatsServer


async def connect(server: NatsServer, name: str) -> Bus:
    return await Bus.connect(server.url, server.user, server.password, name=name)


async def connect_as(server: NatsServer, user: BusUser, streams: bool = False) -> Bus:
    """A connection as one of the server's `users`; with `streams` it makes the streams (a manager's)."""
    return await Bus.connect(server.url, user.name, user.password, name=user.name, streams=streams)


async def until(condition: Callable[[], Awaitable[bool]], timeout: float = 20.0) -> None:
    """Run `condition` (which itself waits on the bus) until it holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the condition did not hold in time")
