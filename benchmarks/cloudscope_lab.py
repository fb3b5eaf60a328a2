"""CloudScope's model against real QEMU guests (the lab): CPU-bound and disk-bound guests on one libvirt
host of this machine, 1 to 4 of them busy; the slowdown each busy guest suffers against what the model
predicts from the libvirt driver's observations alone.

- cpu series: the busy guests run `cpu=100`. Measured slowdown of a busy guest: what it asked for (its
  vCPU at 100 %: 1 core) over the CPU time it got per second.
- disk series: the busy guests run `disk=max` (4 KiB `O_DIRECT` reads of their disk, as fast as they
  go). Measured slowdown of a busy guest: its read rate (ops/s, from the block counters in the driver's
  observations) when it is the only busy guest over its rate with n busy. Each guest's rate alone is
  measured first, in a window of its own. The guests' qcow2 disks are preallocated in full (an empty one
  answers every read with zeros inside QEMU, and the machine's disk would never be read).

Predicted, in both: the mean V-slowdown (Eq. 7) of the busy guests over the same window, with the
loading vectors (Eq. 6) and host load (Eq. 1-5) learned from the same observations; the tables also give
the busy guests' mean loading vector β = (cpu, disk, net) and the host's γ. "outside" is the machine's
CPU use (cores, from /proc/stat) not spent by the lab host: other work on the machine during the window
(a window with more than --max-outside cores of it is measured again, for up to --patience seconds in a
run).
Needs root (it starts a `sova lab` of one host and four guests, and takes it down). Usage:
    sudo .venv/bin/python benchmarks/cloudscope_lab.py [--seconds 30] [--series cpu|disk|both]
        [--max-outside 0.1] [--patience 600]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sova.analyze.interference import predict
from sova.analyze.loading_vectors import VmUsage
from sova.drivers.libvirt_driver import LibvirtDriver
from sova.lab.lab import Lab, driver_options
from sova.model.knowledge import Knowledge

GUESTS = 4
SETTLE = 10.0  # s for a new load to take over (the agent starts it within a second; the cpu duty cycle is 10 s)
LOADS = {"cpu": ["cpu=100"], "disk": ["disk=max"]}


@dataclass(frozen=True)
class Window:
    usage: VmUsage
    delta: np.ndarray  # Eq. 7 per VM of usage.snapshot
    beta: np.ndarray  # Eq. 6, VMs x 3
    gamma: np.ndarray  # the host's (cpu, disk, net)
    outside: float  # cores the machine spent outside the lab host

    def index(self, names: list[str]) -> np.ndarray:
        return np.array([self.usage.snapshot.vm_position[n] for n in names])


def machine_busy() -> float:
    """The machine's CPU seconds so far (everything but idle and iowait), from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


class Bench:
    """The lab, the driver on it and the guests' names; `observe` measures one window."""

    def __init__(self, lab: Lab, driver: LibvirtDriver, names: list[str], args: argparse.Namespace):
        self.lab, self.driver, self.names = lab, driver, names
        self.seconds, self.max_outside, self.patience = args.seconds, args.max_outside, args.patience
        self.again = 0  # windows measured again
        self.waited = 0.0  # s spent on them

    def observe(self, loads: dict[str, list[str]]) -> Window:
        """Set every guest's load (absent: idle), let it settle, observe every second for `seconds`; a
        window in which the machine spent more than max_outside cores outside the lab host is measured
        again while the run's patience lasts (then the last one is kept, with what it saw outside)."""
        for vm in self.names:
            self.lab.load(vm, loads.get(vm, []))
        time.sleep(SETTLE)
        while True:
            t0 = time.monotonic()
            window = _window(self.driver, self.seconds)
            if window.outside <= self.max_outside or self.waited > self.patience:
                return window
            self.again += 1
            self.waited += time.monotonic() - t0


def _window(driver: LibvirtDriver, seconds: float) -> Window:
    knowledge = Knowledge(seconds + 5)
    knowledge.add(driver.observe())
    busy0 = machine_busy()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(1.0)
        knowledge.add(driver.observe())
    busy1 = machine_busy()
    first, last = knowledge.window(seconds + 5)
    span = last.time - first.time
    lab_cpu = float(np.sum(last.host_cpu_time - first.host_cpu_time))
    usage, gamma, beta, delta = predict(knowledge, seconds + 5)
    return Window(usage, delta, beta, gamma[0], max(0.0, (busy1 - busy0) - lab_cpu) / span)


def _row(n: int, measured: float, w: Window, chosen: np.ndarray, extra: str = "") -> tuple[str, float]:
    predicted = float(np.mean(w.delta[chosen]))
    error = abs(predicted - measured) / measured
    beta = np.mean(w.beta[chosen], axis=0)
    row = (
        f"| {n} | {measured:.2f} | {predicted:.2f} | {error:.1%} | {extra}"
        f"({beta[0]:.2f}, {beta[1]:.2f}, {beta[2]:.2f}) | ({w.gamma[0]:.2f}, {w.gamma[1]:.2f}, {w.gamma[2]:.2f}) "
        f"| {w.outside:.2f} |"
    )
    return row, error


def _series(bench: Bench, load: str, measure, columns: int) -> list[float]:
    """One row per count of busy guests (1 to GUESTS); measure(window, chosen) gives (measured slowdown,
    the row's extra cells). Prints the mean error under `columns` columns."""
    names = bench.names
    errors = []
    for busy in range(1, GUESTS + 1):
        w = bench.observe({vm: LOADS[load] for vm in names[:busy]})
        chosen = w.index(names[:busy])
        measured, extra = measure(w, chosen, names[:busy])
        row, err = _row(busy, measured, w, chosen, extra)
        errors.append(err)
        print(row, flush=True)
    print(f"| mean | | | {np.mean(errors):.1%} |" + " |" * (columns - 4))
    return errors


def cpu_series(bench: Bench) -> list[float]:
    print("\ncpu series: busy guests run cpu=100; measured = 1 core asked / cores got")
    print(
        "| busy guests | measured slowdown | predicted δ | error | got (cores) | β busy (cpu, disk, net) | γ | outside |"
    )
    print("|---:|---:|---:|---:|---:|---|---|---:|")

    def measure(w: Window, chosen: np.ndarray, busy: list[str]) -> tuple[float, str]:
        got = w.usage.cpu[chosen] / w.usage.snapshot.vm_vcpus[chosen]
        return float(np.mean(1.0 / np.maximum(got, 1e-9))), f"{np.mean(got):.2f} | "

    return _series(bench, "cpu", measure, 8)


def disk_series(bench: Bench) -> list[float]:
    print("\ndisk series: busy guests run disk=max; measured = read ops/s alone / read ops/s with n busy")
    alone = {}
    for vm in bench.names:
        w = bench.observe({vm: LOADS["disk"]})
        v = w.index([vm])[0]
        alone[vm] = float(w.usage.disk_ops[v])
        mib = alone[vm] * 4096 / 2**20
        print(
            f"{vm} alone: {alone[vm]:.0f} ops/s, {mib:.2f} MiB/s, {w.usage.cpu[v]:.2f} cores, "
            f"busy {w.usage.disk_busy[v]:.2f} s/s, outside {w.outside:.2f} cores",
            flush=True,
        )
    print(
        "| busy guests | measured slowdown | predicted δ | error | ops/s per busy guest | cores per busy guest "
        "| β busy (cpu, disk, net) | γ | outside |"
    )
    print("|---:|---:|---:|---:|---:|---:|---|---|---:|")

    def measure(w: Window, chosen: np.ndarray, busy: list[str]) -> tuple[float, str]:
        ops = w.usage.disk_ops[chosen]
        reference = np.array([alone[vm] for vm in busy])
        cores = np.mean(w.usage.cpu[chosen])
        return float(np.mean(reference / np.maximum(ops, 1e-9))), f"{np.mean(ops):.0f} | {cores:.2f} | "

    return _series(bench, "disk", measure, 9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30.0, help="length of each measured window (default 30)")
    ap.add_argument("--series", choices=("cpu", "disk", "both"), default="both")
    ap.add_argument(
        "--max-outside",
        type=float,
        default=0.1,
        help="cores the machine may spend outside the lab during a window before it is measured again (0.1)",
    )
    ap.add_argument(
        "--patience",
        type=float,
        default=600.0,
        help="seconds a run may spend, in all, measuring again windows other work disturbed (600)",
    )
    args = ap.parse_args()
    lab = Lab(Path(tempfile.mkdtemp(prefix="sova-cloudscope-lab-")), say=lambda _: None)
    when = time.strftime("%Y-%m-%d %H:%M")
    print(f"{when}, {os.cpu_count()} cores, {args.seconds:g} s windows, max outside {args.max_outside:g}", flush=True)
    try:
        state = lab.up(n_hosts=1, vms_per_host=GUESTS, written_disks=True)
        driver = LibvirtDriver({h.name: h.uri for h in state.hosts}, **driver_options(state))
        driver.connect()
        bench = Bench(lab, driver, sorted(v.name for v in state.vms), args)
        try:
            if args.series in ("cpu", "both"):
                cpu_series(bench)
            if args.series in ("disk", "both"):
                disk_series(bench)
            print(f"\n{bench.again} window(s) measured again for other work on the machine ({bench.waited:.0f} s)")
        finally:
            driver.close()
    finally:
        lab.down()


if __name__ == "__main__":
    main()
