"""The managers' lease on a real nats-server: one holder at a time; a holder that goes silent stops
counting itself the leader before another can take the lease; a clean stop hands it over at once."""

from __future__ import annotations

import asyncio
import time

from bus_helpers import connect
from sova.service.lease import Lease

TTL = 2.0


def test_one_manager_holds_the_lease_and_a_silent_one_loses_it_only_after_it_stopped_counting_on_it(nats_server):
    async def run():
        a_bus, b_bus = await connect(nats_server, "a"), await connect(nats_server, "b")
        a, b = Lease(a_bus, "manager-a", TTL), Lease(b_bus, "manager-b", TTL)
        try:
            assert await a.renew() and not await b.renew()
            assert await b.holder() == "manager-a"
            for _ in range(4):  # a renews through two TTLs; b never gets in
                a.next_try = b.next_try = 0.0
                assert await a.renew()
                silent_since = time.monotonic()  # a's last renewal: then it stops (it hangs, or died)
                assert not await b.renew()
                await asyncio.sleep(TTL / 2)
            taken_at = a_gave_up = None
            while taken_at is None:
                b.next_try = 0.0
                if await b.renew():
                    taken_at = time.monotonic()
                if a_gave_up is None and not a.held():
                    a_gave_up = time.monotonic()
                await asyncio.sleep(0.05)
            holder = await b.holder()
            a.next_try = 0.0
            a_back = await a.renew()  # a wakes up: it must not lead again
            return silent_since, a_gave_up, taken_at, holder, a_back
        finally:
            await a_bus.close()
            await b_bus.close()

    silent_since, a_gave_up, taken_at, holder, a_back = asyncio.run(run())
    assert a_gave_up is not None and a_gave_up < taken_at  # never two leaders
    assert taken_at - silent_since >= TTL * 0.9 and holder == "manager-b" and not a_back


def test_a_clean_stop_hands_the_lease_over_at_once(nats_server):
    async def run():
        a_bus, b_bus = await connect(nats_server, "a"), await connect(nats_server, "b")
        a, b = Lease(a_bus, "manager-a", 30.0), Lease(b_bus, "manager-b", 30.0)
        try:
            assert await a.renew() and not await b.renew()
            await a.release()
            b.next_try = 0.0
            return a.held(), await b.renew()
        finally:
            await a_bus.close()
            await b_bus.close()

    a_held, b_took = asyncio.run(run())
    assert not a_held and b_took


def test_a_manager_given_another_ttl_uses_the_buckets_own(nats_server):
    async def run():
        a_bus, b_bus = await connect(nats_server, "a"), await connect(nats_server, "b")
        a, b = Lease(a_bus, "manager-a", 4.0), Lease(b_bus, "manager-b", 30.0)
        try:
            assert await a.renew()
            assert not await b.renew()  # bound to the bucket a made, not refused for its settings
            return b.ttl
        finally:
            await a_bus.close()
            await b_bus.close()

    assert asyncio.run(run()) == 4.0
