"""The API served by uvicorn on the manager's own event loop, over TLS when given a certificate, and then,
when given a client CA, only to clients that show a certificate that CA signed (mutual TLS)."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import uvicorn
from fastapi import FastAPI

HEAD_BYTES = 16 << 10  # the largest request line and headers the API reads


class ApiServerError(OSError):
    """The API cannot listen where it was asked to."""


class ApiServer:
    def __init__(
        self,
        app: FastAPI,
        host: str,
        port: int,
        certificate: Path | None = None,
        key: Path | None = None,
        client_ca: Path | None = None,
    ):
        if client_ca is not None and certificate is None:
            raise ApiServerError("client certificates need TLS: give the API's certificate and key too")
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            lifespan="off",
            http="h11",  # its request head is bounded (below); the body is bounded by service/request_limits.py
            h11_max_incomplete_event_size=HEAD_BYTES,
            ssl_certfile=str(certificate) if certificate else None,
            ssl_keyfile=str(key) if key else None,
            ssl_ca_certs=str(client_ca) if client_ca else None,
            ssl_cert_reqs=ssl.CERT_REQUIRED if client_ca else ssl.CERT_NONE,
        )
        self.server = uvicorn.Server(config)
        self.task: asyncio.Task | None = None

    async def start(self, timeout: float = 20.0) -> None:
        """Serve in the background; returns once it listens (an error if it cannot)."""
        self.task = asyncio.create_task(self.server.serve())
        deadline = asyncio.get_running_loop().time() + timeout
        while not self.server.started:
            if self.task.done():  # uvicorn exits (SystemExit) when it cannot listen
                error = self.task.exception() if not self.task.cancelled() else None
                config = self.server.config
                raise ApiServerError(f"the API cannot listen on {config.host}:{config.port}: {error or 'stopped'}")
            if asyncio.get_running_loop().time() > deadline:
                raise ApiServerError(f"the API server did not listen within {timeout:g} s")
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        if self.task is not None:
            self.server.should_exit = True
            await asyncio.gather(self.task, return_exceptions=True)
            self.task = None
