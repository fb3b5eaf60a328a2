"""``/healthz`` and ``/readyz`` on a listener of their own (``sova manager --health HOST:PORT``), answered by
threads instead of the manager's event loop.

The API serves every call on the manager's one event loop, each in turn: with 200 clients calling as fast
as they are answered, a health check waits behind some 200 calls (docs/reliability.md measured 481 ms p99).
A load balancer's check must not look like a dead manager because the API is busy, so this listener
answers it from a thread, which the interpreter lets run between the loop's steps (every 5 ms at most).
It answers only GETs of those two paths, with the API's bodies (readiness.py), in plain HTTP (they carry
no secret and want no token); connections beyond ``MAX_CONNECTIONS`` at once are closed unanswered, and
an idle one after ``IDLE_SECONDS``.
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sova.service import readiness

log = logging.getLogger(__name__)
MAX_CONNECTIONS = 32
IDLE_SECONDS = 10.0


class HealthServerError(OSError):
    """The health listener cannot listen where it was asked to."""


class _Listener(ThreadingHTTPServer):
    """A thread per connection, at most MAX_CONNECTIONS of them."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # the listen backlog: socketserver's 5 dropped SYNs (a 1 s retry) in a burst

    def __init__(self, address, manager):
        self.manager = manager
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, _Handler)

    def process_request(self, request, client_address) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)  # full: the client sees the connection close
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a load balancer's checks often are
    timeout = IDLE_SECONDS
    wbufsize = -1  # head and body leave in one write (http.server flushes after each request) ...
    disable_nagle_algorithm = True  # ... at once: without both, Nagle and a delayed ACK add 40 ms
    server: _Listener

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self._answer(200, readiness.health(self.server.manager))
        elif path == "/readyz":
            results = readiness.checks_blocking(self.server.manager)
            ready = all(check["ok"] for check in results.values())
            self._answer(200 if ready else 503, {"ready": ready, "checks": results})
        else:
            self._answer(404, {"detail": "this listener answers GET /healthz and /readyz only"})

    def _answer(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args) -> None:
        log.debug("health listener: %s", format % args)


class HealthServer:
    """The listener on `host`:`port`, served from a thread of its own once started."""

    def __init__(self, manager, host: str, port: int):
        try:
            self.listener = _Listener((host, port), manager)
        except OSError as err:
            raise HealthServerError(f"the health listener cannot listen on {host}:{port}: {err.strerror}") from None
        self.thread = threading.Thread(target=self.listener.serve_forever, name="sova-health", daemon=True)

    @property
    def port(self) -> int:
        return self.listener.server_address[1]

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        if self.thread.is_alive():
            self.listener.shutdown()
            self.thread.join()
        self.listener.server_close()
