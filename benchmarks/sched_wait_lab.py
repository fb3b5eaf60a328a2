"""How long a waking guest waits for a CPU on a saturated host (the lab): one libvirt host of this machine
with six 1-vCPU QEMU guests; the first answers ICMP echoes from its host's bridge while 0 to 5 of the
others run `cpu=100`, so that runnable vCPUs go from under to over the machine's cores.

An idle guest answers a ping by waking: QEMU's I/O thread takes the packet from the tap, the guest's vCPU
thread wakes to run its network stack, and both must get a core from the host's scheduler (Linux's
EEVDF here; CFS or Xen's credit scheduler on the papers' hosts). Past the point where busy vCPUs fill
the cores, each wake-up waits for a busy one to be preempted or to end its slice. The round-trip time's
rise over the idle host's is that wait (the wake-ups of one request), which the simulator's
``wake_wait`` and ``wake_wait_over`` take from this measurement (docs/simulator.md).

Prints per count of busy guests: pings answered, mean, median, 95th and 99th percentile RTT (ms), and the
machine's cores busy outside the lab. Needs root (it starts a `sova lab` and takes it down). Usage:
    sudo .venv/bin/python benchmarks/sched_wait_lab.py [--count 2000] [--interval 0.02]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cloudscope_lab import machine_busy
from sova.lab.lab import Lab

GUESTS = 6
SETTLE = 10.0  # s for a load to take over (the agent starts it within a second)


# an ICMP echo client run inside the lab host's namespace (raw socket, root): the guest's kernel answers, no
# program in the guest; prints one RTT in ms per answered echo
_PINGER = r"""
import os, socket, struct, sys, time
address, count, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
sock.settimeout(1.0)
ident = os.getpid() & 0xFFFF
def checksum(data):
    data += b"\0" * (len(data) % 2)
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    return ~(total + (total >> 16)) & 0xFFFF
for seq in range(count):
    body = struct.pack("!d", time.perf_counter()) + bytes(48)
    head = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
    packet = struct.pack("!BBHHH", 8, 0, checksum(head + body), ident, seq) + body
    sent = time.perf_counter()
    sock.sendto(packet, (address, 0))
    while True:
        try:
            reply = sock.recv(2048)
        except socket.timeout:
            break
        kind, _, _, rid, rseq = struct.unpack("!BBHHH", reply[20:28])
        if kind == 0 and rid == ident and rseq == seq:
            print(f"{(time.perf_counter() - sent) * 1000:.4f}", flush=True)
            break
    time.sleep(max(interval - (time.perf_counter() - sent), 0.0))
"""


def ping(netns: str, address: str, count: int, interval: float) -> np.ndarray:
    """RTTs (ms) of `count` ICMP echoes from inside `netns`, one every `interval` s (lost ones left out)."""
    command = ["ip", "netns", "exec", netns, sys.executable, "-c", _PINGER, address, str(count), f"{interval:g}"]
    out = subprocess.run(command, capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"the pinger failed in {netns}: {out.stderr.strip()[-300:]}")
    return np.array([float(line) for line in out.stdout.split()])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=2000, help="echoes per count of busy guests (2000)")
    ap.add_argument("--interval", type=float, default=0.02, help="seconds between pings (0.02)")
    args = ap.parse_args()
    if args.count < 10 or not 0.002 <= args.interval <= 1:
        ap.error("--count must be >= 10 and --interval 0.002-1 s")
    lab = Lab(Path(tempfile.mkdtemp(prefix="sova-sched-lab-")), say=lambda _: None)
    when = time.strftime("%Y-%m-%d %H:%M")
    print(f"{when}, {os.cpu_count()} cores, kernel {os.uname().release}, {args.count} pings every {args.interval:g} s")
    print("\n| busy guests | answered | mean (ms) | median | p95 | p99 | machine busy (cores) |")
    print("|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    try:
        state = lab.up(n_hosts=1, vms_per_host=GUESTS)
        lab.wait_agents(state)
        target, *others = sorted(state.vms, key=lambda vm: vm.index)
        netns = state.hosts[0].netns
        ping(netns, f"10.77.1.{target.index}", 20, 0.05)  # the bridge learns the guest's MAC
        for busy in range(len(others) + 1):
            for i, vm in enumerate(others):
                lab.load(vm.name, ["cpu=100"] if i < busy else [])
            time.sleep(SETTLE)
            before, t0 = machine_busy(), time.monotonic()
            rtt = ping(netns, f"10.77.1.{target.index}", args.count, args.interval)
            cores = (machine_busy() - before) / (time.monotonic() - t0)
            if not len(rtt):
                print(f"| {busy} | 0 | | | | | {cores:.2f} |", flush=True)
                continue
            p50, p95, p99 = np.percentile(rtt, [50, 95, 99])
            print(
                f"| {busy} | {len(rtt)} | {rtt.mean():.3f} | {p50:.3f} | {p95:.3f} | {p99:.3f} | {cores:.2f} |",
                flush=True,
            )
    finally:
        lab.down()


if __name__ == "__main__":
    main()
