"""CloudScope's model against the simulator's measurement (the paper's Fig. 5a, CPU): VMs of 4 vCPUs
(1 GHz each) running sysbench prime 2000 / 3000 / 5000 (each vCPU 20 / 50 / 90 % busy) on the paper's
host (two 8-core 2.9 GHz CPUs, 32 hyper-threads, Xen), 1 to 45 VMs.

Measured: the mean job completion time relative to one VM. Predicted: the mean V-slowdown the model gives
those VMs from the host's counters over the last 60 s. Prints each point and the mean relative error per
curve (the paper: 3.8 % for prime 3000, 10.5 % for prime 5000). Usage:
    python benchmarks/cloudscope_validation.py [--seconds 180]
"""

from __future__ import annotations

import argparse

import numpy as np

from sova.analyze.loading_vectors import host_load, loading_vectors, window_usage
from sova.analyze.vslowdown import gammas, v_slowdown
from sova.drivers.sim import SimDriver
from sova.model.knowledge import Knowledge
from sova.model.scenario_reader import scenario_from_dict
from sova.sim.engine import Simulator
from sova.sim.events import BatchDone

COUNTS = (1, 5, 15, 25, 35, 45)
PRIMES = (2000, 3000, 5000)


def measure(n_vms: int, prime: int, seconds: int) -> tuple[float, float]:
    """(mean job time in s, mean predicted slowdown) for n_vms VMs running sysbench prime jobs."""
    raw = {
        "scenario": {"name": "cloudscope-5a", "duration": seconds, "seed": 1},
        "hosts": [
            {"name": "pm", "cores": 32, "threads_per_core": 2, "ghz": 2.9, "memory": "256GiB", "hypervisor": "xen"}
        ],
        "vms": [{"name": "vm{i}", "count": n_vms, "host": "pm", "vcpus": 4, "mips": 1000, "memory": "2GiB"}],
        "workloads": [{"vm": "vm*", "kind": "sysbench", "prime": prime, "seconds": 10}],
    }
    sim = Simulator(scenario_from_dict(raw))
    driver = SimDriver(sim)
    knowledge = Knowledge(61.0)
    knowledge.add(driver.observe())
    for _ in range(seconds):
        sim.step()
        knowledge.add(driver.observe())
    times = [e.seconds for e in sim.events.take(BatchDone)]
    usage = window_usage(knowledge, 60.0)
    predicted = v_slowdown(gammas(host_load(usage)), loading_vectors(usage), usage.snapshot.vm_host)
    return float(np.mean(times)), float(predicted.mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=180)
    args = ap.parse_args()
    print("| jobs | VMs | measured (relative to 1 VM) | predicted δ | error |")
    print("|---|---:|---:|---:|---:|")
    for prime in PRIMES:
        label = f"prime {prime}"
        results = {n: measure(n, prime, args.seconds) for n in COUNTS}
        base = results[1][0]
        errors = []
        for n, (time, predicted) in results.items():
            measured = time / base
            errors.append(abs(predicted - measured) / measured)
            print(f"| {label} | {n} | {measured:.2f} | {predicted:.2f} | {errors[-1]:.1%} |", flush=True)
        print(f"| {label} | mean | | | {np.mean(errors):.1%} |", flush=True)


if __name__ == "__main__":
    main()
