"""What QEMU's block throttle does to a paced stream, measured on the real thing: qemu-storage-daemon runs
QEMU's block layer with a throttle-group in front of a `null-co` device (reads return zeros at once, so
the throttle is all that paces), exported over NBD on a UNIX socket; this script is the NBD client, keeps
`depth` reads outstanding and stamps each completion.

Measured, each written as one CSV row to benchmarks/data/qemu_throttle.csv:
- `rate`: a backlogged stream against iops-total L (held-out points: L of 50 to 3,200), its completions in
  the first 10 ms beyond the 10 ms of L (the bucket's burst), its rate after them, and its mean over the whole run; QEMU's
  util/throttle.c lets a request through while the bucket's level is at most L/10 (no `*_max`: a tenth
  of a second of the average) and adds one unit per request, the level leaking at L per second: a burst
  of L/10 + 1 then exactly L;
- `second`: the counts of consecutive 1 s epochs of that stream (the SLO's samples): their mean and
  population standard deviation;
- `pause`: the stream stops issuing for `pause` seconds (as a VM its device or its threads hold back),
  then is backlogged again: the requests it completes in the first 10 ms after the pause beyond the 10 ms
  of L, against what
  the bucket's leak gives, min(L pause, L/10 + 1);
- `rewrite`: the same limit written again every `period` s through QMP (qom-set of the group's limits,
  as libvirt's block_set_io_throttle does): throttle_config zeroes the bucket's level, so each write
  lets L/10 + 1 more through at once, L + (L/10 + 1) / period in all while the stream is backlogged;
- `size`: iops-size S with reads of size s: the ops/s obtained, against L / max(1, s / S)
  (throttle_account counts a request larger than S as s / S units).

Usage: python benchmarks/qemu_throttle.py [--seconds 20] [--limits 50 100 ...]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import socket
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

NBD_OPT_MAGIC = 0x49484156454F5054  # "IHAVEOPT"
NBD_REQUEST, NBD_REPLY = 0x25609513, 0x67446698
BURST_WINDOW = 0.010  # s: completions this soon after the start are the bucket's burst
OUT = Path(__file__).parent / "data" / "qemu_throttle.csv"


class ThrottledNull:
    """A qemu-storage-daemon serving a throttled null device over NBD; a context manager (stops it on exit)."""

    def __init__(self, limits: dict, folder: Path):
        self.sock = folder / "nbd.sock"
        group = {"qom-type": "throttle-group", "id": "tg0", "limits": limits}
        null = {"driver": "null-co", "node-name": "null0", "size": 1 << 30, "read-zeroes": True}
        throttle = {"driver": "throttle", "node-name": "thr", "throttle-group": "tg0", "file": "null0"}
        self.argv = ["qemu-storage-daemon", "--object", json.dumps(group), "--blockdev", json.dumps(null)]
        self.argv += ["--blockdev", json.dumps(throttle), "--nbd-server", f"addr.type=unix,addr.path={self.sock}"]
        self.argv += ["--export", "type=nbd,id=exp0,node-name=thr,name=disk"]
        self.qmp_path = folder / "qmp.sock"
        self.argv += ["--chardev", f"socket,id=qmp,path={self.qmp_path},server=on,wait=off", "--monitor", "chardev=qmp"]

    def __enter__(self) -> ThrottledNull:
        self.proc = subprocess.Popen(self.argv)
        for _ in range(100):
            if self.sock.exists():
                return self
            time.sleep(0.02)
        raise RuntimeError("qemu-storage-daemon did not start")

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(5)
        self.sock.unlink(missing_ok=True)

    def qmp(self) -> tuple[socket.socket, io.TextIOWrapper]:
        """A QMP connection out of its greeting, capabilities negotiated, and its reader."""
        conn = socket.socket(socket.AF_UNIX)
        conn.connect(str(self.qmp_path))
        reader = conn.makefile("r")
        reader.readline()
        conn.sendall(b'{"execute": "qmp_capabilities"}\n')
        reader.readline()
        return conn, reader


def rewrite_limit(qmp: tuple[socket.socket, io.TextIOWrapper], limit: int) -> None:
    """Write the group's iops-total again, as libvirt's block_set_io_throttle does (throttle_config)."""
    value = {"iops-total": limit}
    command = {"execute": "qom-set", "arguments": {"path": "tg0", "property": "limits", "value": value}}
    qmp[0].sendall(json.dumps(command).encode() + b"\n")
    answer = json.loads(qmp[1].readline())
    if "return" not in answer:
        raise RuntimeError(f"qom-set: {answer}")


def _recv(conn: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("NBD server closed the connection")
        data += chunk
    return bytes(data)


def connect(path: Path) -> socket.socket:
    """An NBD connection in the transmission phase (fixed newstyle, NBD_OPT_EXPORT_NAME "disk")."""
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(str(path))
    _recv(conn, 18)  # NBDMAGIC, IHAVEOPT, handshake flags
    conn.sendall(struct.pack(">I", 3))  # fixed newstyle, no zeroes
    name = b"disk"
    conn.sendall(struct.pack(">QII", NBD_OPT_MAGIC, 1, len(name)) + name)
    _recv(conn, 10)  # export size, transmission flags
    return conn


def run_stream(conn: socket.socket, seconds: float, depth: int, size: int, pause: tuple[float, float] = (0, 0)):
    """Completion times (s from the first request) of reads of `size` kept `depth` outstanding for `seconds`,
    and when issuing resumed after the pause; pause (at, length): from `at` none are issued, and once the
    last outstanding one completed, none for `length` seconds more (the bucket leaks that long)."""
    handle, done, outstanding, resumed = 0, [], 0, 0.0
    start = time.monotonic()

    def send() -> None:
        nonlocal handle, outstanding
        conn.sendall(struct.pack(">IHHQQI", NBD_REQUEST, 0, 0, handle, (handle * size) % (1 << 29), size))
        handle, outstanding = handle + 1, outstanding + 1

    for _ in range(depth):
        send()
    at, length = pause
    while outstanding:
        magic, error, _ = struct.unpack(">IIQ", _recv(conn, 16))
        if magic != NBD_REPLY or error:
            raise RuntimeError(f"NBD reply {magic:x} error {error}")
        _recv(conn, size)
        now = time.monotonic() - start
        done.append(now)
        outstanding -= 1
        if length and not resumed and now >= at:
            if outstanding:
                continue
            time.sleep(length)
            resumed = now = time.monotonic() - start
        if now < seconds:
            while outstanding < depth:
                send()
    return np.array(done), resumed


def measure(args) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for limit in args.limits:
            with ThrottledNull({"iops-total": limit}, Path(tmp)) as daemon:
                conn = connect(daemon.sock)
                done, _ = run_stream(conn, args.seconds, args.depth, 4096)
                burst = int((done < BURST_WINDOW).sum()) - round(limit * BURST_WINDOW)
                after = done[done >= BURST_WINDOW]
                paced = (len(after) - 1) / (after[-1] - after[0])
                counts = np.histogram(done, bins=np.arange(0, np.floor(done[-1]) + 1))[0]
                rows.append(
                    dict(
                        kind="rate",
                        limit=limit,
                        seconds=args.seconds,
                        burst=burst,
                        predicted_burst=limit // 10 + 1,
                        paced_rate=round(paced, 3),
                        mean_rate=round(len(done) / done[-1], 3),
                        predicted_mean=round((limit * done[-1] + limit // 10 + 1) / done[-1], 3),
                    )
                )
                rows.append(
                    dict(
                        kind="second",
                        limit=limit,
                        epochs=len(counts) - 1,
                        mean=round(counts[1:].mean(), 3),
                        std=round(counts[1:].std(), 3),
                        first=int(counts[0]),
                    )
                )
                for pause in args.pauses:  # after the bucket is full again
                    done, resumed = run_stream(conn, 3.0, args.depth, 4096, pause=(1.0, pause))
                    after = done[done >= resumed]
                    quick = int((after < resumed + BURST_WINDOW).sum()) - round(limit * BURST_WINDOW)
                    rows.append(
                        dict(
                            kind="pause",
                            limit=limit,
                            pause=pause,
                            burst=quick,
                            predicted_burst=int(min(limit * pause, limit // 10 + 1)),
                        )
                    )
                qmp = daemon.qmp()
                for period in args.rewrites:  # the same limit written again every `period` seconds
                    stop = threading.Event()

                    def rewrite(period=period, qmp=qmp, stop=stop, limit=limit) -> None:
                        while not stop.wait(period):
                            rewrite_limit(qmp, limit)

                    writer = threading.Thread(target=rewrite)
                    writer.start()
                    done, _ = run_stream(conn, args.seconds / 2, args.depth, 4096)
                    stop.set()
                    writer.join()
                    steady = done[done >= 1.0]
                    rows.append(
                        dict(
                            kind="rewrite",
                            limit=limit,
                            period=period,
                            paced_rate=round((len(steady) - 1) / (steady[-1] - steady[0]), 3),
                            predicted=round(limit + (limit // 10 + 1) / period, 3),
                        )
                    )
                qmp[0].close()
                conn.close()
        for iops_size, size in args.size_points:
            with ThrottledNull({"iops-total": args.size_limit, "iops-size": iops_size}, Path(tmp)) as daemon:
                conn = connect(daemon.sock)
                done, _ = run_stream(conn, args.seconds / 2, args.depth, size)
                after = done[done >= BURST_WINDOW]
                rows.append(
                    dict(
                        kind="size",
                        limit=args.size_limit,
                        iops_size=iops_size,
                        size=size,
                        paced_rate=round((len(after) - 1) / (after[-1] - after[0]), 3),
                        predicted=round(args.size_limit / max(1.0, size / iops_size), 3),
                    )
                )
                conn.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--limits", type=int, nargs="+", default=[50, 100, 200, 400, 800, 1600, 3200])
    parser.add_argument("--pauses", type=float, nargs="+", default=[0.02, 0.05, 0.2])
    parser.add_argument("--rewrites", type=float, nargs="+", default=[0.025, 0.1, 0.25, 1.0])
    parser.add_argument("--size-limit", type=int, default=1600)
    args = parser.parse_args()
    args.size_points = [(4096, 4096), (4096, 16384), (4096, 65536), (4096, 6144), (16384, 65536), (16384, 4096)]
    rows = measure(args)
    OUT.parent.mkdir(exist_ok=True)
    keys = list(dict.fromkeys(k for row in rows for k in row))
    with OUT.open("w", newline="") as f:
        writer = csv.DictWriter(f, keys)
        writer.writeheader()
        writer.writerows(rows)
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
