"""Placement optimizers' runtime and objective against problem size (Virtue §IV-F, issue 5).

Synthetic multi-tenant problems: services of 4 VMs (client -> web -> cache chains, a few Mb/s each),
CPU 0.1-1 core per VM, a random starting placement with at most 4 VMs per host. Fabrics: the paper's
three-tier testbed (4 racks of 20 hosts, 100 Mb/s edge, 4:1 and 4:1) for 120 VMs / 80 hosts, and fat
trees with 4:1 edge oversubscription above. Each algorithm reports seconds and the minimax objective
(the Random start's value for comparison). Usage:

    python benchmarks/placement.py                       # 20 x 20 (with Model), 120 x 80, 1,200 x 800
    python benchmarks/placement.py --sizes 120x80 --algorithms greedy-fill,model
    python benchmarks/placement.py --sizes 100000x10000 --algorithms sa-all --sa-steps 400000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.sparse import coo_matrix

from sova.model.scenario import TopologySpec
from sova.plan.placement.annealing import anneal
from sova.plan.placement.fabric import levels_for
from sova.plan.placement.greedy_fill import greedy_fill
from sova.plan.placement.greedy_net import greedy_net
from sova.plan.placement.milp import solve
from sova.plan.placement.minimax import Evaluator
from sova.plan.placement.problem import PlacementProblem
from sova.plan.placement.random_placement import random_placement


def fabric(n_hosts: int) -> TopologySpec:
    if n_hosts == 80:
        return TopologySpec(
            kind="three-tier",
            link_speed=100e6,
            racks=4,
            hosts_per_rack=20,
            racks_per_agg=2,
            tor_oversubscription=4.0,
            agg_oversubscription=4.0,
        )
    k = 4
    while (k**3) // 4 * 4 < n_hosts:  # hosts_per_edge = 2k (4:1 over k/2 up-links)
        k += 2
    return TopologySpec(kind="fat-tree", link_speed=100e6, k=k, hosts_per_edge=2 * k, uplink_speed=100e6)


def synthetic(n_vms: int, n_hosts: int, seed: int = 1) -> PlacementProblem:
    rng = np.random.default_rng(seed)
    rows, cols, vals = [], [], []
    for s in range(0, n_vms - 3, 4):  # client -> web -> cache, and the replies
        c, w, m = s, s + 1, s + 2
        for a, b, rate in ((c, w, 2e6), (w, c, 20e6), (w, m, 5e6), (m, w, 15e6), (s + 3, w, 8e6)):
            rows.append(a)
            cols.append(b)
            vals.append(rate * rng.uniform(0.5, 1.5))
    t = coo_matrix((vals, (rows, cols)), shape=(n_vms, n_vms)).tocsr()
    return PlacementProblem(
        vm_names=tuple(f"vm{i}" for i in range(n_vms)),
        host_names=tuple(f"pm{i}" for i in range(n_hosts)),
        cpu=rng.uniform(0.1, 1.0, n_vms),
        host_cores=np.full(n_hosts, 4.0),
        traffic=t,
        levels=levels_for(fabric(n_hosts), n_hosts),
        slots=max(4, -(-5 * n_vms // (4 * n_hosts))),  # the paper's 4, or room for a quarter more VMs
    )


SA_ENERGY = {"sa-c": "cpu", "sa-cn": "nic", "sa-cntm": "nic-tm", "sa-all": "all"}


def run(algorithm: str, p: PlacementProblem, x0: np.ndarray, sa_steps: int = 20_000) -> tuple[float, float]:
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    if algorithm == "greedy-fill":
        x = greedy_fill(p)
    elif algorithm == "greedy-net":
        x = greedy_net(p, x0)
    elif algorithm == "model":
        x = solve(p, start=greedy_fill(p), time_limit=60, gap=0.0).x
    else:
        x = anneal(p, x0, SA_ENERGY[algorithm], rng, steps=sa_steps)
    return time.perf_counter() - t0, Evaluator(p, "all", x).value()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="20x20,120x80,1200x800", help="VMSxHOSTS,... (default 20x20,120x80,1200x800)")
    ap.add_argument("--algorithms", default="greedy-fill,sa-all,greedy-net,model")
    ap.add_argument("--sa-steps", type=int, default=20_000, help="annealing steps (default 20,000, the policies')")
    args = ap.parse_args()
    for size in args.sizes.split(","):
        v, h = (int(x) for x in size.split("x"))
        p = synthetic(v, h)
        x0 = random_placement(p, np.random.default_rng(1))
        print(f"{v} VMs / {h} hosts ({p.levels.names}): Random {Evaluator(p, 'all', x0).value():.3f}")
        for a in args.algorithms.split(","):
            if a == "model" and v > 40:
                continue
            secs, val = run(a, p, x0, args.sa_steps)
            print(f"  {a:12} {secs:9.3f} s   objective {val:.3f}")


if __name__ == "__main__":
    main()
