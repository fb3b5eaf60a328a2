"""The API's request bounds (service/request_limits.py) on a real uvicorn, driven over a raw socket so a
test can send a head without its body, a body in chunks, or a body that trickles."""

from __future__ import annotations

import asyncio
import time

from fastapi import FastAPI, Request

from sova.service.api import _clip_input
from sova.service.api_server import ApiServer
from sova.service.natsd import free_port
from sova.service.request_limits import RequestLimits

MAX_BODY = 1000


def limited_app(calls: list[str]) -> FastAPI:
    app = FastAPI()

    @app.put("/api/v1/thing")
    async def put(request: Request) -> dict:
        body = await request.body()
        calls.append("put")
        return {"bytes": len(body)}

    @app.get("/healthz")
    async def healthz() -> dict:
        return {"status": "ok"}

    app.add_middleware(RequestLimits, max_body=MAX_BODY, body_seconds=1.0)
    return app


async def exchange(port: int, head: str, parts: list[bytes] = (), pause: float = 0.0) -> tuple[int, bytes, float]:
    """Send a request head, then `parts` with `pause` s before each; the status, the body and the seconds
    until the answer came."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    began = time.monotonic()
    writer.write(head.encode())
    await writer.drain()
    answer = asyncio.create_task(reader.read(65536))
    for part in parts:
        await asyncio.sleep(pause)
        if answer.done():
            break
        writer.write(part)
        await writer.drain()
    raw = await asyncio.wait_for(answer, 10)
    took = time.monotonic() - began
    writer.close()
    status_line, _, rest = raw.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2], took


def serve(calls: list[str], scenario) -> object:
    async def run():
        port = free_port()
        server = ApiServer(limited_app(calls), "127.0.0.1", port)
        await server.start()
        try:
            return await scenario(port)
        finally:
            await server.stop()

    return asyncio.run(run())


def head(length: int | None = None, token: bool = True, chunked: bool = False) -> str:
    lines = ["PUT /api/v1/thing HTTP/1.1", "Host: 127.0.0.1"]
    lines += ["Authorization: Bearer sova_x"] if token else []
    lines += [f"Content-Length: {length}"] if length is not None else []
    lines += ["Transfer-Encoding: chunked"] if chunked else []
    return "\r\n".join(lines) + "\r\n\r\n"


def test_a_body_its_length_says_is_too_large_is_refused_before_a_byte_of_it_is_sent():
    calls: list[str] = []
    status, body, _ = serve(calls, lambda port: exchange(port, head(length=100_000_000)))
    assert status == 413 and b"at most 1000 bytes" in body and calls == []


def test_a_chunked_body_is_refused_once_its_bytes_pass_the_bound():
    calls: list[str] = []
    chunk = b"%x\r\n%s\r\n" % (400, b"a" * 400)
    status, body, _ = serve(calls, lambda port: exchange(port, head(chunked=True), [chunk] * 5))
    assert status == 413 and b"at most 1000 bytes" in body and calls == []


def test_a_body_that_trickles_is_cut_off_at_the_time_bound_and_the_rest_answers_meanwhile():
    calls: list[str] = []

    async def scenario(port):
        slow = asyncio.create_task(exchange(port, head(length=500), [b"a"] * 50, pause=0.1))
        await asyncio.sleep(0.3)
        health = await exchange(port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        return await slow, health

    (status, body, took), health = serve(calls, scenario)
    assert status == 408 and b"within 1 s" in body and 0.9 < took < 5 and calls == []
    assert health[0] == 200 and health[2] < 0.5


def test_a_call_that_wants_a_token_and_carries_none_is_refused_before_its_body_is_read():
    calls: list[str] = []
    status, body, _ = serve(calls, lambda port: exchange(port, head(length=10, token=False)))
    assert status == 401 and b"bearer token" in body and calls == []


def test_a_body_within_the_bounds_reaches_the_route_whole():
    calls: list[str] = []
    status, body, _ = serve(calls, lambda port: exchange(port, head(length=MAX_BODY), [b"a" * MAX_BODY]))
    assert status == 200 and body == b'{"bytes":1000}' and calls == ["put"]


def test_a_bad_content_length_is_refused():
    calls: list[str] = []
    status, _, _ = serve(
        calls, lambda port: exchange(port, head().replace("\r\n\r\n", "\r\nContent-Length: -5\r\n\r\n"))
    )
    assert status == 400 and calls == []


def test_a_validation_error_echoes_at_most_the_start_of_a_long_input():
    long = {"loc": ["body", "throughput"], "msg": "bad", "input": "x" * 100_000}
    clipped = _clip_input(long)
    assert len(clipped["input"]) < 300 and "100002 characters" in clipped["input"]
    short = {"loc": ["body"], "msg": "bad", "input": [1, 2]}
    assert _clip_input(short) == short
