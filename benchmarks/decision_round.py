"""Sova's decision round alone, on synthetic sensor reports: all analyzers, Algorithm 2 for every host and
Algorithm 1 (VF scheduling and the migration choice) on every host.

The Knowledge holds 60 one-second snapshots of a cluster with 10 VMs per host (enough for a 30 s
analyzer window and five 10 s reports): per-VM CPU, blocked and waiting time, guest packets and bytes,
host CPU and NIC counters, memory, VF state. Loads are random but seeded; about 5 % of hosts are hot.
Usage:

    python benchmarks/decision_round.py                   # 1,000 and 10,000 hosts
    python benchmarks/decision_round.py --hosts 1000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from sova.analyze.base import AnalyzeStage
from sova.model.knowledge import Knowledge
from sova.model.snapshot import Snapshot, VmCounters
from sova.plan.dsriov_vlm import DsriovVlm

VMS_PER_HOST = 10


def synthetic_knowledge(n_hosts: int, seconds: int = 60, seed: int = 1) -> Knowledge:
    rng = np.random.default_rng(seed)
    V = n_hosts * VMS_PER_HOST
    vm_host = np.repeat(np.arange(n_hosts), VMS_PER_HOST)
    cpu_share = rng.uniform(0.0, 0.9, V)
    net_on = rng.uniform(0, 1, V)  # fraction of seconds with traffic
    net_rate = rng.uniform(1e7, 1e9, V) / 8  # bytes/s while on
    hot = rng.uniform(0, 1, n_hosts) < 0.05
    net_rate[hot[vm_host]] *= 3
    hosts = tuple(f"h{i}" for i in range(n_hosts))
    vms = tuple(f"v{i}" for i in range(V))
    nic = tuple("vf" if x else "vnic" for x in rng.uniform(0, 1, V) < 0.2)
    k = Knowledge(seconds + 1)
    cum = {key: np.zeros(V) for key in ("cpu", "blocked", "wait", "bytes", "pkts")}
    host_cpu, nic_tx = np.zeros(n_hosts), np.zeros(n_hosts)
    for t in range(seconds + 1):
        on = rng.uniform(0, 1, V) < net_on
        got = cpu_share * rng.uniform(0.8, 1.2, V)
        sent = np.where(on, net_rate, 0.0)
        if t:
            cum["cpu"] += got
            cum["blocked"] += 1 - got
            cum["bytes"] += sent
            cum["pkts"] += sent / 1448
            host_cpu += np.bincount(vm_host, weights=got, minlength=n_hosts)
            nic_tx += np.bincount(vm_host, weights=sent, minlength=n_hosts)
        counters = VmCounters(
            cpu_time=cum["cpu"].copy(),
            wait_time=cum["wait"].copy(),
            blocked_time=cum["blocked"].copy(),
            vnic_rx_bytes=np.zeros(V),
            vnic_tx_bytes=cum["bytes"].copy(),
            vnic_rx_packets=np.zeros(V),
            vnic_tx_packets=cum["pkts"].copy(),
            guest_rx_bytes=np.zeros(V),
            guest_tx_bytes=cum["bytes"].copy(),
            guest_rx_packets=np.zeros(V),
            guest_tx_packets=cum["pkts"].copy(),
            blk_rd_ops=np.zeros(V),
            blk_wr_ops=np.zeros(V),
            blk_rd_bytes=np.zeros(V),
            blk_wr_bytes=np.zeros(V),
            blk_time=np.zeros(V),
            guest_tx_wanted=cum["bytes"].copy(),  # what the guests sent is what they wanted: no limit bound
            guest_rx_wanted=np.zeros(V),
        )
        k.add(
            Snapshot(
                time=float(t),
                hosts=hosts,
                vms=vms,
                host_cores=np.full(n_hosts, 8.0),
                host_memory=np.full(n_hosts, 65536.0),
                host_cpu_time=host_cpu.copy(),
                dom0_cpu_time=np.zeros(n_hosts),
                dom0_vcpus=np.full(n_hosts, 2.0),
                nic_bandwidth=np.full(n_hosts, 10e9),
                nic_rx_bytes=np.zeros(n_hosts),
                nic_tx_bytes=nic_tx.copy(),
                vfs_total=np.full(n_hosts, 63),
                vfs_used=np.bincount(vm_host[np.array(nic) == "vf"], minlength=n_hosts),
                vm_host=vm_host,
                vm_vcpus=np.ones(V),
                vm_memory=np.full(V, 2048.0),
                vm_memory_used=np.full(V, 1024.0),
                vm_dirty_rate=np.zeros(V),
                vm_weight=np.full(V, 256.0),
                vm_cap=np.zeros(V),
                vm_nic=nic,
                vm_vf_rate=np.zeros(V),
                vm_migrating=np.zeros(V, dtype=bool),
                counters=counters,
            )
        )
    return k


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    params = DsriovVlm.defaults()
    print("| hosts | VMs | decision round (s), best of repeats | actions |")
    print("|---:|---:|---:|---:|")
    for n in args.hosts:
        k = synthetic_knowledge(n)
        best, actions = float("inf"), 0
        for _ in range(args.repeat):
            policy = DsriovVlm(**params)
            t0 = time.perf_counter()
            plan = policy.plan(k, AnalyzeStage(k).findings(policy.analyses()))  # the round: analyze, then plan
            best = min(best, time.perf_counter() - t0)
            actions = len(plan)
        print(f"| {n:,} | {n * VMS_PER_HOST:,} | {best:.3f} | {actions:,} |", flush=True)


if __name__ == "__main__":
    main()
