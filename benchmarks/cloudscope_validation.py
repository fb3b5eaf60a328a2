"""CloudScope's model against the simulator's measurement (the paper's Fig. 5a-c, 6 and 7), point by point,
on the scenarios of scenarios/papers/cloudscope/ (the same runs `sova run` makes of them; each reports the
model's prediction with `[outputs] interference = 60`). How each prediction is formed:
src/sova/report/fidelity/cloudscope.py; docs/fidelity.md has the mean errors beside the paper's.

Prints each point and the mean relative error per curve (the paper: 3.8 % prime 5000, 10.5 % prime 3000,
7.4 % disk, 4.8 % network). Usage:
    python benchmarks/cloudscope_validation.py [--figure 5a|5b|5c|6|7|all]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from sova.report.fidelity import interference_validation as cs

ROOT = Path(__file__).resolve().parent.parent


def table(title: str, rows: cs.Rows) -> None:
    """Print the points of one curve and its mean relative error."""
    errors = [abs(predicted - measured) / measured for _, measured, predicted in rows]
    print(f"\n{title}\n| point | measured | predicted | error |\n|---|---:|---:|---:|")
    for (label, measured, predicted), error in zip(rows, errors, strict=True):
        print(f"| {label} | {measured:.3g} | {predicted:.3g} | {error:.1%} |")
    print(f"| mean | | | {np.mean(errors):.1%} |", flush=True)


def figure_5a() -> None:
    for prime in (2000, 3000, 5000):
        table(
            f"Fig. 5a, prime {prime}: job time relative to one VM",
            cs.fig5a_rows(cs.default_runs(ROOT, f"fig2a-prime{prime}")),
        )


def figure_5b() -> None:
    alone = cs.default_runs(ROOT, "fig2b-disk-1vm")
    for n in (2, 5, 10):
        rows = cs.fig5b_rows(alone, cs.default_runs(ROOT, f"fig2b-disk-{n}vm"), n)
        table(f"Fig. 5b, {n} VMs: total read throughput (MB/s)", rows)


def figure_5c() -> None:
    table(
        "Fig. 5c: each VM's throughput relative to one VM alone", cs.fig5c_rows(cs.default_runs(ROOT, "fig2c-network"))
    )


def figure_6() -> None:
    disk, net = cs.fig6_rows(cs.default_runs(ROOT, "fig6-mixed"))
    table("Fig. 6a: the target VM's read throughput (MB/s)", disk)
    table("Fig. 6b: the target VM's mean HTTP response time (ms)", net)


def figure_7() -> None:
    alone = cs.default_runs(ROOT, "fig7-hadoop-alone")
    for co_resident in ("prime3000", "prime5000"):
        runs = cs.default_runs(ROOT, f"fig7-hadoop-{co_resident}")
        for phase in ("map", "reduce"):
            table(f"Fig. 7, {phase} phase (s) with 20 VMs of {co_resident}", cs.fig7_rows(alone, runs, phase))


FIGURES = {"5a": figure_5a, "5b": figure_5b, "5c": figure_5c, "6": figure_6, "7": figure_7}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--figure", choices=[*FIGURES, "all"], default="all")
    args = ap.parse_args()
    for name, figure in FIGURES.items():
        if args.figure in (name, "all"):
            figure()


if __name__ == "__main__":
    main()
