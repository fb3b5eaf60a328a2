"""A PostgreSQL server for the tests: its own cluster in a temporary directory, on a free loopback port,
started and stopped by its PID (Debian's binaries; as root, the cluster runs as the `postgres` user, since
PostgreSQL refuses to run as root)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)


def binaries() -> Path | None:
    """The newest installed PostgreSQL's bin directory, or None."""
    return next((d for d in BIN_DIRS if (d / "initdb").exists()), None)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    def __init__(self, directory: Path):
        self.bin = binaries()
        self.directory, self.port = directory, _free_port()
        self.data = directory / "data"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _as_owner(self, cmd: list[str]) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd

    def start(self, timeout: float = 60.0) -> PostgresServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.directory, owner.pw_uid, owner.pw_gid)
        if not self.data.exists():
            init = [str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]
            subprocess.run(self._as_owner(init), check=True, capture_output=True)
        server = [str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port)]
        server += ["-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.directory}"]
        with (self.directory / "postgres.log").open("ab") as log:
            self.process = subprocess.Popen(self._as_owner(server), stdout=log, stderr=log)
        ready = [str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited; see {self.directory / 'postgres.log'}")
            if subprocess.run(ready, capture_output=True).returncode == 0:
                return self
            time.sleep(0.1)  # polling for readiness, not waiting a fixed time
        self.stop()
        raise RuntimeError(f"postgres did not accept connections within {timeout:g} s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:  # SIGINT to the postmaster (by its own PID): a fast shutdown, which does not wait, as SIGTERM's
            # smart one does, for clients still connected (a pool the garbage collector has not closed yet)
            os.kill(int((self.data / "postmaster.pid").read_text().split()[0]), signal.SIGINT)
        except (OSError, ValueError, IndexError):
            self.process.terminate()  # runuser passes SIGTERM on
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(30)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def crash(self, timeout: float = 30.0) -> None:
        """Kill the postmaster with SIGKILL (its PID from postmaster.pid: runuser would not pass SIGKILL on)
        and wait until it and its backends are gone; start() then recovers the cluster from its WAL."""
        pid = int((self.data / "postmaster.pid").read_text().split()[0])
        os.kill(pid, 9)
        deadline = time.monotonic() + timeout
        while self.process.poll() is None or _listening(self.port):
            if time.monotonic() > deadline:
                raise RuntimeError("postgres did not die")
            time.sleep(0.05)

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
        return True
    return False
