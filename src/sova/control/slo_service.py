"""The storage tenant API of a running `sova manage`: Table 1's calls (set_Throughput, set_IOsize, set_SC,
set_PF, get_Status; and the latency SLO) over a Unix socket, which `sova slo set|get` speaks; the same
socket takes `sova host drain|release|list --socket` (control/host_control.py) and `sova snapshot export
--socket` (control/snapshot_service.py).

One JSON object per line each way:

    {"op": "set", "vm": "web", "throughput": [400, 600], "io_size": [12288, 32768], "sc_rate": [80, 90],
     "pf_ratio": [8, 15], "latency": 0.02}            (any of the settings)
    {"op": "get", "vm": "web"}
    -> {"ok": true, "vm": "web", "slo": {...}, "status": {"sc_rate": 93.2, "pf_ratio": 4.1}}
    -> {"ok": false, "error": "VM 'web': throughput lower bound 600 is above the upper bound 400"}

A set is all or nothing: every setting is checked on a copy of the VM's SLO and the book changes only if
all of them pass. The manage loop picks changes up between ticks (`take_changed`), so its controllers
never see a half-applied SLO. The socket is created owner-only (0600): until the service mode's API
with its tokens and roles, whoever may use the socket is the operator running `sova manage`.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import socketserver
import stat
import tempfile
import threading
from dataclasses import asdict
from pathlib import Path

from sova.control.host_control import OPS as HOST_OPS
from sova.control.host_control import HostControl
from sova.control.snapshot_service import SnapshotService
from sova.model.storage_slo import SloBook, SloError, slo_settings, updated_slo

REQUEST_MAX = 64 * 1024  # bytes of one request line


def default_socket() -> Path:
    """Where `sova manage` listens and `sova slo` asks by default: the user's runtime directory."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"sova-manage-{os.getuid()}.sock"


class SloService:
    """A SloBook behind a lock, with the requests of `sova slo` applied to it."""

    def __init__(
        self, book: SloBook | None, hosts: HostControl | None = None, snapshots: SnapshotService | None = None
    ):
        """book: None where the manage holds no SLO (its profile runs no IO controller); hosts: the manage's
        maintenance requests, served on the same socket (drain, release, hosts); snapshots: its cluster
        snapshots (snapshot)."""
        self.book = book
        self.hosts = hosts
        self.snapshots = snapshots
        self._lock = threading.Lock()
        self._changed: set[str] = set()
        self._server: socketserver.ThreadingUnixStreamServer | None = None
        self._path: Path | None = None

    def handle(self, request: object) -> dict:
        """One request's answer; a bad request is answered with what is wrong and changes nothing."""
        if not isinstance(request, dict):
            return _refused(f"expected a JSON object, got {type(request).__name__}")
        op, vm = request.get("op"), request.get("vm")
        if op in HOST_OPS and self.hosts is not None:
            return self.hosts.handle(request)
        if op == "snapshot" and self.snapshots is not None:
            return self.snapshots.handle(request)
        if op not in ("set", "get"):
            more = "".join(f", '{op}'" for op in HOST_OPS) if self.hosts is not None else ""
            more += ", 'snapshot'" if self.snapshots is not None else ""
            return _refused(f"op: expected 'set' or 'get'{more}, got {op!r}")
        if self.book is None:
            return _refused("this sova manage holds no storage SLO (its profile is not see)")
        if not isinstance(vm, str) or not vm:
            return _refused(f"vm: expected a VM name, got {vm!r}")
        try:
            with self._lock:
                if op == "set":
                    self._set(vm, request)
                return self._describe(vm)
        except SloError as exc:
            return _refused(str(exc))

    def _set(self, vm: str, request: dict) -> None:
        settings = {key: value for key, value in request.items() if key not in ("op", "vm")}
        self.book.set_slo(vm, updated_slo(vm, self.book.slo(vm), settings))  # an unknown VM is refused here
        self._changed.add(vm)

    def _describe(self, vm: str) -> dict:
        slo = slo_settings(self.book.slo(vm))
        return {"ok": True, "vm": vm, "slo": slo, "status": asdict(self.book.get_status(vm))}

    def take_changed(self) -> set[str]:
        """The VMs whose SLO changed since the last call (the manage loop then updates its controllers)."""
        with self._lock:
            changed, self._changed = self._changed, set()
            return changed

    def listen(self, path: Path) -> None:
        """Serve requests on a Unix socket at `path`, in a background thread, until close()."""
        _clear_stale_socket(path)
        service = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                while line := self.rfile.readline(REQUEST_MAX + 1):
                    if len(line) > REQUEST_MAX:
                        answer = _refused(f"request longer than {REQUEST_MAX} bytes")
                        while (rest := self.rfile.readline(REQUEST_MAX)) and not rest.endswith(b"\n"):
                            pass  # the rest of that line, a piece at a time
                    else:
                        try:
                            answer = service.handle(json.loads(line))
                        except ValueError as exc:  # not JSON, not UTF-8
                            answer = _refused(f"not a JSON request: {exc}")
                    self.wfile.write((json.dumps(answer, allow_nan=False) + "\n").encode())

        old_mask = os.umask(0o177)  # the socket is born owner-only: no moment where others could connect
        try:
            self._server = socketserver.ThreadingUnixStreamServer(str(path), Handler)
        finally:
            os.umask(old_mask)
        self._server.daemon_threads = True
        self._path = path
        threading.Thread(target=self._server.serve_forever, name="sova-slo-api", daemon=True).start()

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            with contextlib.suppress(FileNotFoundError):
                self._path.unlink()  # the socket this service made
            self._server = None


def _refused(message: str) -> dict:
    return {"ok": False, "error": message}


def _clear_stale_socket(path: Path) -> None:
    """Make room for the socket: a socket nobody listens on (a manage that died) is removed; anything else
    at the path, or a live one, is refused rather than touched."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise SloError(f"{path} exists and is not a socket; choose another --control-socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except (ConnectionRefusedError, FileNotFoundError):
        path.unlink()
        return
    finally:
        probe.close()
    raise SloError(f"another sova manage is listening at {path}; choose another --control-socket")


def ask(path: Path, request: dict, timeout: float = 10.0) -> dict:
    """Send one request to the `sova manage` listening at `path` and return its answer."""
    try:
        payload = json.dumps(request, allow_nan=False) + "\n"
    except ValueError:
        return _refused("expected finite numbers, not NaN or infinity")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        try:
            conn.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            return _refused(f"no sova manage is listening at {path} (start one, or give its --socket)")
        except OSError as exc:
            return _refused(f"cannot reach sova manage at {path}: {exc.strerror or exc}")
        try:
            conn.sendall(payload.encode())
            with conn.makefile("rb") as answers:
                line = answers.readline()
        except TimeoutError:
            return _refused(f"sova manage at {path} did not answer within {timeout:g} s")
    try:
        return json.loads(line) if line else _refused(f"sova manage at {path} closed the connection unanswered")
    except ValueError:
        return _refused(f"sova manage at {path} answered something that is not JSON")
