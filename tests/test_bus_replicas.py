"""The bus's streams and key-value buckets on a JetStream cluster: as many replicas as URLs given (at most
three), one on a single server; a stream made with fewer is raised and none is lowered; replicas asked of a
server that is no cluster are refused, naming the cause; with one server of three left the bus refuses
messages, and has lost none once a second is back. Real nats-servers."""

from __future__ import annotations

import asyncio
import logging

import nats.errors
import pytest

from bus_helpers import connect
from sova.service.bus import STREAMS, Bus, BusError, replicas_for, server_urls
from sova.service.lease import Lease
from sova.service.slo_relay import slo_bucket

BUCKETS = ("KV_sova_leader", "KV_sova_slos")


async def replicas(bus: Bus) -> dict[str, int]:
    """Every stream's and bucket's replicas, as the servers report them."""
    names = [*STREAMS.values(), *BUCKETS]
    return {name: (await bus.js.stream_info(name)).config.num_replicas for name in names}


async def make_buckets(bus: Bus) -> None:
    """Make (or find, and raise) the lease's and the SLOs' buckets, as a manager does."""
    await Lease(bus, "m1", ttl=3.0).renew()  # taken or not (another connection holds it), the bucket is there
    await slo_bucket(bus)


def test_streams_and_buckets_get_three_replicas_on_a_cluster_and_one_on_a_single_server(nats_cluster, nats_server):
    async def scenario():
        on_cluster = await connect(nats_cluster, "manager")
        on_server = await connect(nats_server, "manager")
        try:
            for bus in (on_cluster, on_server):
                await make_buckets(bus)
            placed = (await on_cluster.js.stream_info(STREAMS["sova.action."])).cluster
            return await replicas(on_cluster), await replicas(on_server), placed
        finally:
            await on_cluster.close()
            await on_server.close()

    clustered, single, placed = asyncio.run(scenario())
    assert set(clustered.values()) == {3} and len(clustered) == 5
    assert set(single.values()) == {1} and len(single) == 5
    assert placed.name == "sova" and len(placed.replicas) == 2  # the leader and two followers


def test_a_stream_made_with_one_replica_is_raised_to_three_and_none_is_lowered(nats_cluster, caplog):
    one_url = nats_cluster.urls[0]

    async def scenario():
        caplog.set_level(logging.INFO, logger="sova.service.bus")
        first = await Bus.connect(one_url, nats_cluster.user, nats_cluster.password, name="old-agent")
        await make_buckets(first)
        before = await replicas(first)
        every = await connect(nats_cluster, "manager")
        await make_buckets(every)
        raised = await replicas(every)
        again = await Bus.connect(one_url, nats_cluster.user, nats_cluster.password, name="old-agent")
        await make_buckets(again)
        after = await replicas(again)
        for bus in (first, every, again):
            await bus.close()
        return before, raised, after

    before, raised, after = asyncio.run(scenario())
    assert set(before.values()) == {1}
    assert set(raised.values()) == {3} and set(after.values()) == {3}
    said = caplog.text
    assert "the NATS server is one of a cluster (it names 2 other(s)) but --nats gave 1 URL(s)" in said
    assert "stream SOVA_ACTIONS had 1 replica(s); now 3" in said and "stream KV_sova_leader had 1 replica(s)" in said


def test_several_urls_for_a_single_server_are_refused_naming_the_replicas(nats_server):
    three = ",".join([nats_server.url] * 3)

    async def scenario():
        with pytest.raises(BusError) as refused:
            await Bus.connect(three, nats_server.user, nats_server.password)
        return str(refused.value)

    said = asyncio.run(scenario())
    assert "refused stream SOVA_ACTIONS with 3 replica(s)" in said and "non-clustered mode" in said


def test_a_nats_value_is_one_url_or_several_comma_separated():
    assert server_urls("nats://a:4222") == ["nats://a:4222"]
    assert server_urls("tls://a:4222, tls://b:4222,tls://c:4222") == ["tls://a:4222", "tls://b:4222", "tls://c:4222"]
    assert [replicas_for(["u"] * n) for n in (1, 2, 3, 5)] == [1, 2, 3, 3]
    for bad in ("nats://a:4222,", "a:4222", "nats://a:4222,,nats://b:4222", "http://a:80"):
        with pytest.raises(BusError, match="expected nats://HOST:PORT or tls://HOST:PORT"):
            server_urls(bad)


def test_with_two_of_three_servers_down_the_bus_refuses_and_loses_nothing_until_a_second_is_back(nats_cluster):
    async def scenario():
        bus = await connect(nats_cluster, "manager")
        try:
            for index in range(5):
                assert await bus.publish("sova.action.h1", f"a{index}", b"{}")
            for server in nats_cluster.servers[1:]:
                server.stop(kill=True)
            with pytest.raises((nats.errors.Error, TimeoutError)):  # no quorum: not stored, and said so
                await bus.publish("sova.action.h1", "a5", b"{}")
            nats_cluster.servers[1].start()
            deadline = asyncio.get_running_loop().time() + 60
            while True:  # the stream elects a leader among the two, then takes messages again
                try:
                    await bus.publish("sova.action.h1", "a5", b"{}")  # sent again under its id, stored once
                    break
                except (nats.errors.Error, TimeoutError):
                    assert asyncio.get_running_loop().time() < deadline, "no quorum again within 60 s"
                    await asyncio.sleep(0.1)
            return (await bus.js.stream_info(STREAMS["sova.action."])).state.messages
        finally:
            await bus.close()

    assert asyncio.run(scenario()) == 6  # the five from before and the one refused, once
