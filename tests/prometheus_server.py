"""A real Prometheus server for tests (Debian's `prometheus` package): it scrapes one target every second
with a bearer token and evaluates the given rule files, on 127.0.0.1 at a free port, and is stopped by
its PID."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from sova.service.natsd import free_port


class PrometheusServer:
    def __init__(self, directory: Path, target: str, token: str, rule_files: list[Path]):
        """target: HOST:PORT serving /metrics; token: the bearer token it asks for."""
        self.directory, self.port = directory, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        directory.mkdir(parents=True)
        (directory / "token").write_text(token)
        rules = ", ".join(f'"{path}"' for path in rule_files)
        (directory / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            f"rule_files: [{rules}]\n"
            "scrape_configs:\n"
            "  - job_name: sova\n"
            f"    authorization: {{credentials_file: {directory / 'token'}}}\n"
            f"    static_configs: [{{targets: ['{target}']}}]\n"
        )
        self.process: subprocess.Popen | None = None

    def start(self) -> PrometheusServer:
        binary = shutil.which("prometheus")
        if binary is None:
            pytest.fail(
                "needs the Prometheus server, from the Debian package `prometheus` (as root, `make` installs it)"
            )
        arguments = [
            f"--config.file={self.directory / 'prometheus.yml'}",
            f"--storage.tsdb.path={self.directory / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
        ]
        with open(self.directory / "log", "wb") as log:
            self.process = subprocess.Popen([binary, *arguments], stdout=log, stderr=subprocess.STDOUT)
        return self

    async def ready(self) -> bool:
        """Whether it answers /-/ready (it stopped: an error naming its log)."""
        if self.process.poll() is not None:
            raise RuntimeError(f"prometheus exited: {(self.directory / 'log').read_text()[-2000:]}")
        try:
            async with httpx.AsyncClient(timeout=5) as client:
                return (await client.get(f"{self.url}/-/ready")).status_code == 200
        except httpx.TransportError:
            return False

    async def get(self, path: str, **params) -> dict:
        """The answer of its HTTP API (`data` of a `success`; AssertionError naming the error otherwise)."""
        async with httpx.AsyncClient(timeout=10) as client:
            answer = (await client.get(f"{self.url}/api/v1/{path}", params=params)).json()
        assert answer["status"] == "success", (path, params, answer)
        return answer["data"]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
