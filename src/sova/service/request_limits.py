"""Bounds on every request to the manager's API, applied before anything reads, parses or authenticates it.

Anyone who can reach the port can send a request, so what one costs must not depend on what it sends:
- a body larger than ``max_body`` bytes is refused (413): at once when its Content-Length says so, else
  as soon as the bytes read pass the bound (a chunked body has no length);
- a body must arrive within ``body_seconds`` of the request's start (408), so a sender that trickles it
  cannot hold a connection and the handler waiting on it;
- a call to a path that wants a token and carries none (no Authorization header, no dashboard cookie)
  is refused (401) before its body is read; the token itself is checked by the route, as before.
Headers are bounded by the HTTP server (uvicorn's h11: 16 KiB per request head). Errors name the bound
and never echo the input.
"""

from __future__ import annotations

import asyncio
import json

from starlette.exceptions import HTTPException

from sova.service.dashboard import COOKIE as DASHBOARD_COOKIE

MAX_BODY = 2 << 20  # bytes: the largest call is a run's scenario file (at most 1 MiB of TOML, as JSON)
BODY_SECONDS = 30.0  # s for a body to arrive, from the request's start
PROTECTED = ("/api/", "/metrics", "/openapi.json", "/docs")  # paths that want a token
COOKIE = f"{DASHBOARD_COOKIE}=".encode()


class RequestLimits:
    """ASGI middleware holding each HTTP request to the bounds above (module docstring)."""

    def __init__(self, app, max_body: int = MAX_BODY, body_seconds: float = BODY_SECONDS):
        self.app, self.max_body, self.body_seconds = app, max_body, body_seconds

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self._refuse_at_once(scope)
        if refused is not None:
            await _answer(send, *refused)
            return
        await self.app(scope, self._bounded(receive), send)

    def _refuse_at_once(self, scope) -> tuple[int, str, dict] | None:
        """A status and message for what the request's head alone shows is refused, else None."""
        headers = dict(scope["headers"])
        length = headers.get(b"content-length")
        if length is not None and not length.isdigit():
            return 400, "Content-Length must be a whole number of bytes", {}
        if length is not None and int(length) > self.max_body:
            return 413, f"the body may hold at most {self.max_body} bytes", {}
        if scope["path"].startswith(PROTECTED) and not _has_credentials(headers):
            return 401, "a bearer token is required", {"www-authenticate": "Bearer"}
        return None

    def _bounded(self, receive):
        """`receive`, refusing (an HTTPException the app answers) a body past the size or time bound;
        once the body is whole, messages (a disconnect) pass as they come, with no deadline."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_seconds
        received = 0
        whole = False

        async def receive_bounded():
            nonlocal received, whole
            if whole:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 1e-3))
            except TimeoutError:
                raise HTTPException(408, f"the body did not arrive within {self.body_seconds:g} s") from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:
                    raise HTTPException(413, f"the body may hold at most {self.max_body} bytes")
                whole = not message.get("more_body", False)
            return message

        return receive_bounded


def _has_credentials(headers: dict[bytes, bytes]) -> bool:
    return b"authorization" in headers or COOKIE in headers.get(b"cookie", b"")


async def _answer(send, status: int, message: str, headers: dict[str, str]) -> None:
    body = json.dumps({"detail": message}).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    head += [(k.encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})
