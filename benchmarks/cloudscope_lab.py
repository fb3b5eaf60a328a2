"""CloudScope's model against real QEMU guests (the lab): CPU-bound guests on one libvirt host of this
machine, 1 to 4 of them busy; the slowdown each busy guest suffers against what the model predicts from
the libvirt driver's observations alone.

Measured slowdown of a busy guest: what it asked for (its vCPU at 100 %: 1 core) over the CPU time it got
per second. Predicted: the mean V-slowdown (Eq. 7) of the busy guests over the same window. Needs root
(it starts a `sova lab` of one host and four guests, and takes it down). Usage:
    sudo .venv/bin/python benchmarks/cloudscope_lab.py [--seconds 30]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from sova.analyze.loading_vectors import host_load, loading_vectors, window_usage
from sova.analyze.vslowdown import gammas, v_slowdown
from sova.drivers.libvirt_driver import LibvirtDriver
from sova.lab.lab import Lab, driver_options
from sova.model.knowledge import Knowledge

GUESTS = 4


def measure(lab: Lab, state, driver: LibvirtDriver, busy: int, seconds: float) -> tuple[float, float]:
    names = sorted(v.name for v in state.vms)
    for k, vm in enumerate(names):
        lab.load(vm, ["cpu=100"] if k < busy else [])
    time.sleep(10)  # the guests' load settles
    knowledge = Knowledge(seconds + 5)
    knowledge.add(driver.observe())
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(1.0)
        knowledge.add(driver.observe())
    usage = window_usage(knowledge, seconds + 5)
    snap = usage.snapshot
    chosen = np.array([snap.vm_position[n] for n in names[:busy]])
    got = usage.cpu[chosen] / snap.vm_vcpus[chosen]
    predicted = v_slowdown(gammas(host_load(usage)), loading_vectors(usage), snap.vm_host)[chosen]
    return float(np.mean(1.0 / np.maximum(got, 1e-9))), float(np.mean(predicted))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args()
    lab = Lab(Path(tempfile.mkdtemp(prefix="sova-cloudscope-lab-")), say=lambda _: None)
    try:
        state = lab.up(n_hosts=1, vms_per_host=GUESTS)
        driver = LibvirtDriver({h.name: h.uri for h in state.hosts}, **driver_options(state))
        driver.connect()
        print("| busy guests | measured slowdown | predicted δ | error |")
        print("|---:|---:|---:|---:|")
        errors = []
        for busy in range(1, GUESTS + 1):
            measured, predicted = measure(lab, state, driver, busy, args.seconds)
            errors.append(abs(predicted - measured) / measured)
            print(f"| {busy} | {measured:.2f} | {predicted:.2f} | {errors[-1]:.1%} |", flush=True)
        print(f"| mean | | | {np.mean(errors):.1%} |")
        driver.close()
    finally:
        lab.down()


if __name__ == "__main__":
    main()
