"""SASLO's SLO enforcement against real QEMU disks (the lab): three guests on one libvirt host of this
machine read their (written) disks as fast as they go (`disk=max`, 4 KiB O_DIRECT reads), so they
compete for the machine's disk; each has a throughput SLO. The same run is made with each IO
controller: `static-throttle` (QEMU's total_iops_sec fixed at the target), and at each period asked
`see` (the PI controller moving it every epoch) or `integral` (the paper's Integral baseline), with the Runtime ticking on the wall clock and the libvirt driver's io_sample /
set_io_throttle.

Reported per controller and VM, from the controller's per-second throughput: mean, SC rate, PF ratio,
AVPE; for the static throttle, its mean over the target is QEMU's throttle accuracy. A first run with no
limit ("none") shows what each guest reaches. Also the epochs
the loop achieved: the requested period, the mean and 95th percentile of the time between two control
calls, and what one call (io_sample and set_io_throttle) took. Needs root (it starts a `sova lab` of one
host and three guests, and takes it down). Usage:
    sudo .venv/bin/python benchmarks/saslo_lab.py [--seconds 60] [--periods 0.025 0.05 0.1]
        [--targets 60 90 120] [--controllers see integral]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from sova.control.runtime import Runtime
from sova.drivers.libvirt_driver import LibvirtDriver
from sova.lab.lab import Lab, driver_options
from sova.model.io_sample import IoThrottle
from sova.model.scenario import ControlSpec
from sova.model.storage_slo import SloBook, StorageSlo
from sova.plan.base import registry

SETTLE = 5.0  # s for the guests' dd loops to start


def run(driver: LibvirtDriver, names: list[str], targets: list[float], controller: str, period: float, seconds: float):
    """(the controller's per-VM summary, intervals between control calls, durations of a call)."""
    book = SloBook(names)
    for vm, target in zip(names, targets, strict=True):
        book.set_slo(vm, StorageSlo(throughput=(target, target)))
    cls = registry()[controller]
    policy = cls(**(cls.defaults() | {"period": period}))
    policy.bind(book, dict.fromkeys(names, "disk"))
    runtime = Runtime(driver, [policy], ControlSpec(monitor_period=1.0))
    calls, took = [], []
    original = runtime._control

    def timed(c):
        t0 = time.monotonic()
        original(c)
        calls.append(t0)
        took.append(time.monotonic() - t0)

    runtime._control = timed
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        runtime.tick()
        time.sleep(max(0.0, period / 4))
    driver.set_io_throttle(IoThrottle(tuple(names), np.zeros(len(names)), np.zeros(len(names))))  # lift
    return policy.slo_summary(), np.diff(calls), np.array(took)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0, help="length of each run (default 60)")
    ap.add_argument("--periods", type=float, nargs="+", default=[0.025, 0.05, 0.1], help="SEE epochs to try (s)")
    ap.add_argument("--targets", type=float, nargs=3, default=[60.0, 90.0, 120.0], help="IOPS of the three SLOs")
    ap.add_argument(
        "--controllers", nargs="+", default=["see"], help="IO controllers to run at each period (see, integral)"
    )
    args = ap.parse_args()
    lab = Lab(Path(tempfile.mkdtemp(prefix="sova-saslo-lab-")), say=lambda _: None)
    print(time.strftime("%Y-%m-%d %H:%M"), f"{args.seconds:g} s runs, targets {args.targets}", flush=True)
    try:
        state = lab.up(n_hosts=1, vms_per_host=3, written_disks=True)
        driver = LibvirtDriver({h.name: h.uri for h in state.hosts}, **driver_options(state))
        driver.connect()
        names = sorted(v.name for v in state.vms)
        try:
            for vm in names:
                lab.load(vm, ["disk=max"])
            time.sleep(SETTLE)
            print(
                "| controller | period (s) | epoch mean / p95 (ms) | call (ms) | VM | target | mean | SC % | PF % | AVPE % |"
            )
            print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
            # first without limits (a throttle far above what the disk gives): what each guest reaches
            unlimited = [1e6] * len(names)
            runs = [
                ("none", "static-throttle", 1.0, unlimited),
                ("static-throttle", "static-throttle", 1.0, args.targets),
            ]
            runs += [(name, name, p, args.targets) for name in args.controllers for p in args.periods]
            for label, controller, period, targets in runs:
                summary, gaps, took = run(driver, names, targets, controller, period, args.seconds)
                epoch = f"{gaps.mean() * 1e3:.1f} / {np.percentile(gaps, 95) * 1e3:.1f}"
                for vm in names:
                    s = summary[vm]
                    if label == "none":
                        print(f"| none | | | | {vm} | | {s['throughput_mean']:.1f} | | | |", flush=True)
                        continue
                    print(
                        f"| {label} | {period:g} | {epoch} | {took.mean() * 1e3:.1f} | {vm} | {s['target_mean']:.0f} "
                        f"| {s['throughput_mean']:.1f} | {s['sc_rate']:.1f} | {s['pf_ratio']:.1f} | {s['avpe']:.2f} |",
                        flush=True,
                    )
        finally:
            for vm in names:
                lab.load(vm, [])
            driver.close()
    finally:
        lab.down()


if __name__ == "__main__":
    main()
