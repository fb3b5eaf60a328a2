"""The host side of Sova's guest agent (the Sova paper's DomU daemon) over a virtio-serial channel.

The guest writes a report every second: a header line ``report SEQ UPTIME ACTIVE_NIC``, its
/proc/net/dev, a few /proc/meminfo lines, answers (``pong TOKEN``, ``error ...``), ``sendq SAMPLES
HELD QUEUED`` (how many times since it started it sampled its TCP sockets, in how many of those a
socket held at least its congestion window of bytes, and the bytes queued at the last sample; an
agent without it sends no such line), the running loads and ``end``. The host may send one-line commands (``load ...``, ``ping TOKEN``). This side never
blocks: ``poll`` reads whatever has arrived and keeps the newest complete report.
"""

from __future__ import annotations

import contextlib
import socket
import time
from dataclasses import dataclass, field


@dataclass
class GuestReport:
    """One complete report from a guest."""

    seq: int
    uptime: float
    active_nic: str
    net: dict[str, tuple[int, int, int, int]]  # interface -> (rx_bytes, rx_packets, tx_bytes, tx_packets)
    meminfo: dict[str, int]  # field -> bytes
    loads: str
    answers: list[str] = field(default_factory=list)
    sendq: SendQueues | None = None  # None: the agent does not sample its send queues


@dataclass(frozen=True)
class SendQueues:
    """The agent's send-queue samples: cumulative since it started (they restart with it)."""

    samples: int  # times it read its TCP sockets
    held: int  # of those, times a socket held at least its congestion window of bytes
    queued: int  # bytes in its sockets' send queues at the last sample


def parse_report(lines: list[str]) -> GuestReport:
    """Parse one report (its lines from ``report`` up to, not including, ``end``)."""
    head = lines[0].split()
    net: dict[str, tuple[int, int, int, int]] = {}
    mem: dict[str, int] = {}
    loads, answers = "", []
    sendq = None
    for line in lines[1:]:
        if ":" in line and not line.startswith(("pong", "error", "loads")):
            key, _, rest = line.partition(":")
            key = key.strip()
            vals = rest.split()
            if len(vals) >= 16 and vals[0].isdigit():  # /proc/net/dev: rx bytes packets ... tx bytes packets
                net[key] = (int(vals[0]), int(vals[1]), int(vals[8]), int(vals[9]))
            elif vals and vals[0].isdigit():  # /proc/meminfo in kB
                mem[key] = int(vals[0]) * 1024
        elif line.startswith("sendq "):
            sendq = parse_sendq(line) or sendq
        elif line.startswith("loads"):
            loads = line[5:].strip()
        elif line.startswith(("pong", "error")):
            answers.append(line)
    return GuestReport(
        seq=int(head[1]),
        uptime=float(head[2]) if len(head) > 2 else 0.0,
        active_nic=head[3] if len(head) > 3 else "",
        net=net,
        meminfo=mem,
        loads=loads,
        answers=answers,
        sendq=sendq,
    )


def parse_sendq(line: str) -> SendQueues | None:
    """``sendq SAMPLES HELD QUEUED``; None if malformed (held above samples, not three counts)."""
    fields = line.split()[1:]
    if len(fields) != 3 or not all(f.isdigit() for f in fields):
        return None
    samples, held, queued = map(int, fields)
    return SendQueues(samples, held, queued) if held <= samples else None


class GuestChannel:
    """A connection to one guest's agent socket (QEMU listens; we connect).

    A connection that has carried nothing for STALE_SECONDS while the agent reports every second is closed and
    made again: a new connection is a new "host connected" event for the guest's virtio-serial port, which
    a port whose state a live migration left wrong needs (seen in the lab: after a migration, a guest whose
    reports never came through the destination's socket).
    """

    STALE_SECONDS = 10.0

    def __init__(self, path: str, clock=time.monotonic):
        self.path = path
        self.sock: socket.socket | None = None
        self._buf = b""
        self._lines: list[str] = []
        self.latest: GuestReport | None = None
        self.answers: list[str] = []
        self.reconnects = 0  # connections given up as stale
        self._clock = clock
        self._heard = 0.0  # when the connection was made or last carried bytes

    def _connect(self) -> bool:
        if self.sock is not None:
            return True
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(self.path)
        except OSError:
            s.close()
            return False
        self.sock = s
        self._heard = self._clock()
        return True

    def close(self) -> None:
        """Close the connection; a line or report it left unfinished is dropped (the next one starts afresh)."""
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()
        self.sock = None
        self._lines, self._buf = [], b""

    def poll(self) -> GuestReport | None:
        """Read what has arrived; return the newest complete report (None if never one)."""
        if not self._connect():
            return self.latest
        assert self.sock is not None
        while True:
            try:
                chunk = self.sock.recv(65536)
            except BlockingIOError:
                if self._clock() - self._heard > self.STALE_SECONDS:
                    self.close()  # made again at the next poll
                    self.reconnects += 1
                break
            except OSError:
                self.close()
                break
            if not chunk:  # QEMU closed the socket: the VM stopped or left this host
                self.close()
                break
            self._buf += chunk
            self._heard = self._clock()
        *complete, self._buf = self._buf.split(b"\n")
        for raw in complete:
            line = raw.decode(errors="replace").rstrip("\r")
            if line.startswith("report "):
                self._lines = [line]
            elif line == "end" and self._lines:
                self.latest = parse_report(self._lines)
                self.answers.extend(self.latest.answers)
                self._lines = []
            elif self._lines:
                self._lines.append(line)
        return self.latest

    def send(self, command: str) -> bool:
        """Send one command line; False if the guest's socket is not reachable now."""
        if "\n" in command:
            raise ValueError("a guest command is one line")
        if not self._connect():
            return False
        assert self.sock is not None
        try:
            self.sock.sendall((command + "\n").encode())
        except (BlockingIOError, OSError):
            self.close()
            return False
        return True
