"""CloudScope's V-slowdown model at data-center scale (targets from issue 13: a prediction for every VM
of 10,000 hosts / 100,000 VMs under 1 s; one VM's slowdown on each of 10,000 hosts under 10 ms).

On the synthetic Knowledge of benchmarks/decision_round.py (60 one-second snapshots, 10 VMs per host):
- predict all: learn the loading vectors and host loads over a 30 s window, then δ for every VM;
- model only: the γ of every host and δ of every VM from those inputs;
- what if: one VM's δ on every host (Algorithm 1's Predict for all PM_k).
Best of --repeat runs. Usage: python benchmarks/vslowdown_speed.py [--hosts 1000 10000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from decision_round import VMS_PER_HOST, synthetic_knowledge
from sova.analyze.interference import predict
from sova.analyze.loading_vectors import host_load, loading_vectors, vm_load, vm_terms, window_usage
from sova.analyze.vslowdown import gammas, slowdown_if_placed, v_slowdown


def best(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        work()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure(n: int, repeat: int) -> tuple[float, float, float]:
    """Seconds: predict all from the Knowledge, the model alone, one VM on every host."""
    k = synthetic_knowledge(n)

    u = window_usage(k, 30.0)
    terms, beta = vm_terms(u), loading_vectors(u)
    load = host_load(u, terms)
    guests = np.bincount(u.snapshot.vm_host, minlength=n)
    vm = vm_load(terms, 0)
    return (
        best(repeat, lambda: predict(k, 30.0)),
        best(repeat, lambda: v_slowdown(gammas(load), beta, u.snapshot.vm_host)),
        best(repeat, lambda: slowdown_if_placed(load, vm, guests, beta[0], 0)),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print("| hosts | VMs | predict all (s) | model only (ms) | what if, one VM on every host (ms) |")
    print("|---:|---:|---:|---:|---:|")
    for n in args.hosts:
        full, model, what_if = measure(n, args.repeat)
        print(f"| {n:,} | {n * VMS_PER_HOST:,} | {full:.3f} | {model * 1e3:.1f} | {what_if * 1e3:.2f} |", flush=True)


if __name__ == "__main__":
    main()
