"""The health listener (service/health_server.py): /healthz and /readyz answered by threads, with the
API's bodies, also while the manager's event loop is held; a real manager on a real nats-server, and
the listener's bounds on a stand-in manager."""

from __future__ import annotations

import asyncio
import socket
import time
from types import SimpleNamespace

import httpx
import pytest

from service_stack import Stack, wait_for
from sova.cli import main
from sova.service.health_server import MAX_CONNECTIONS, HealthServer, HealthServerError


def test_the_health_listener_answers_as_the_api_does_even_while_the_event_loop_is_held(nats_server, tmp_path):
    async def run():
        stack = Stack(nats_server, tmp_path, mode="auto")
        await stack.start_cluster()
        await stack.start_manager()
        base = await stack.start_api()
        health = HealthServer(stack.manager, "127.0.0.1", 0)
        health.start()
        try:
            await wait_for(lambda: stack.manager.leading and stack.manager.collector.fresh())
            async with httpx.AsyncClient(base_url=base, timeout=30) as api:
                from_api = [(await api.get(path)).json() for path in ("/healthz", "/readyz")]
            side = f"http://127.0.0.1:{health.port}"
            # called from the loop's own thread, so the loop is held until they are answered: were the
            # listener served by the loop, these would time out
            held = [httpx.get(f"{side}{path}", timeout=10) for path in ("/healthz", "/readyz")]
            others = [httpx.get(f"{side}/api/v1/hosts", timeout=10), httpx.post(f"{side}/healthz", timeout=10)]
            return from_api, held, others
        finally:
            await asyncio.to_thread(health.stop)
            await stack.stop_all()

    (api_health, api_ready), (health, ready), (path, post) = asyncio.run(run())
    assert health.status_code == 200 and health.headers["content-type"] == "application/json"
    assert health.json().keys() == api_health.keys() and health.json()["leader"] is True
    assert health.json()["hosts_reporting"] == api_health["hosts_reporting"] > 0
    assert ready.status_code == 200 and ready.json() == api_ready
    assert path.status_code == 404 and "/healthz and /readyz only" in path.json()["detail"]
    assert post.status_code == 501


def _stand_in(leading: bool = True):
    """What the health answer reads of a manager, nothing more."""
    return SimpleNamespace(
        leading=leading,
        is_leader=lambda: leading,
        collector=SimpleNamespace(fresh=lambda: ["h1"], stale_after=30.0),
        started=time.time(),
    )


def test_connections_past_the_bound_are_closed_unanswered_and_served_again_once_one_ends():
    health = HealthServer(_stand_in(), "127.0.0.1", 0)
    health.start()
    try:
        held = [socket.create_connection(("127.0.0.1", health.port)) for _ in range(MAX_CONNECTIONS)]
        address = f"http://127.0.0.1:{health.port}"
        with httpx.Client(base_url=address, headers={"Connection": "close"}, timeout=10) as probe:
            # each held connection has its thread once the listener accepted it: until then a new one may pass
            deadline = time.monotonic() + 30
            while True:
                try:
                    probe.get("/healthz")
                except httpx.TransportError:
                    break  # closed unanswered: the bound holds
                assert time.monotonic() < deadline, "the listener kept answering past its bound"
            held.pop().close()
            deadline = time.monotonic() + 30
            while True:
                try:
                    answer = probe.get("/healthz")
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "a freed connection was not served again"
        for connection in held:
            connection.close()
    finally:
        health.stop()
    assert answer.status_code == 200 and answer.json()["hosts_reporting"] == 1


def test_a_taken_port_is_refused_naming_the_address():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(HealthServerError, match=f"cannot listen on 127.0.0.1:{port}"):
            HealthServer(_stand_in(), "127.0.0.1", port)


def test_sova_manager_refuses_a_health_address_that_is_not_host_port(tmp_path, capsys):
    assert main(["manager", "--state", f"sqlite:///{tmp_path}/m.db", "--health", "nowhere"]) == 2
    assert "--health" in capsys.readouterr().err
    assert not (tmp_path / "m.db").exists()
