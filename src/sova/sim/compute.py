"""Proportional-share CPU scheduling (Xen credit / KVM CFS shares), vectorized over all hosts.

Each host has C hardware threads shared by its scheduling entities (Dom0 and the guests). An entity
asks for d cores (already bounded by its vCPU count and cap) and has weight w. The allocation is the
weighted water-fill: a_e = min(d_e, w_e * theta_h), with theta_h the level at which the host is full;
an idle share is handed to whoever still wants CPU (work-conserving), as both schedulers do.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


def weighted_share(group: np.ndarray, demand: np.ndarray, weight: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Allocations for entities grouped by host.

    group: host index per entity; demand, weight: per entity; capacity: per host. Returns per-entity
    allocation with sum per host <= capacity and allocation <= demand.
    """
    n = len(demand)
    if n == 0:
        return np.zeros(0)
    # most hosts are not contended: everyone gets their demand, no sorting needed
    contended = np.bincount(group, weights=demand, minlength=len(capacity)) > capacity
    if not contended.any():
        return demand.astype(float, copy=True)
    sel = contended[group]
    if not sel.all():
        alloc = demand.astype(float, copy=True)
        alloc[sel] = weighted_share(group[sel], demand[sel], weight[sel], capacity)
        return alloc
    ratio = demand / weight
    order = np.lexsort((ratio, group))
    g, d, w, r = group[order], demand[order], weight[order], ratio[order]
    n_groups = len(capacity)
    starts = np.searchsorted(g, np.arange(n_groups))
    ends = np.searchsorted(g, np.arange(n_groups), side="right")
    cd = np.concatenate(([0.0], np.cumsum(d)))
    cw = np.concatenate(([0.0], np.cumsum(w)))
    idx = np.arange(n)
    d_before = cd[idx] - cd[starts[g]]  # demand of entities sorted before j in its host
    w_from = cw[ends[g]] - cw[idx]  # weight of j and all after it in its host
    fills = d_before + r * w_from >= capacity[g]
    # first j per host where the host is full at level r_j
    theta = np.full(n_groups, np.inf)
    hit = np.flatnonzero(fills)
    if hit.size:
        first = np.full(n_groups, n, dtype=np.int64)
        np.minimum.at(first, g[hit], hit)
        has = first < n
        j = first[has]
        theta[has] = (capacity[has] - d_before[j]) / w_from[j]
    alloc_sorted = np.minimum(d, w * theta[g])
    alloc = np.empty(n)
    alloc[order] = alloc_sorted
    return alloc


class Runnable(NamedTuple):
    """Runnable vCPUs on average over a step, per VM and summed per host."""

    per_vm: np.ndarray
    per_host: np.ndarray


class Compute:
    """The compute subsystem: each host's cores (hardware threads), threads per core, per-core MIPS and
    Dom0's vCPUs and weight, and each VM's vCPUs, MIPS, weight and cap, which it owns; the proportional
    share per host with Dom0, and the run-queue and hyper-thread slowdowns. Where each VM runs is the
    engine's: the queries take it (`vm_host`)."""

    def __init__(self, hosts, vms, sched_overhead: float, ht_yield: float, wake_wait: tuple[float, float] = (0, 0)):
        self.host_cores = np.array([h.cores for h in hosts], dtype=float)
        self.threads_per_core = np.array([h.threads_per_core for h in hosts], dtype=float)
        self.host_core_mips = np.array([h.core_mips for h in hosts], dtype=float)
        self.dom0_vcpus = np.array([h.dom0_vcpus for h in hosts], dtype=float)
        self.dom0_weight = np.array([h.dom0_weight for h in hosts], dtype=float)
        self.vm_vcpus = np.array([v.vcpus for v in vms], dtype=float)
        self.vm_mips = np.array([v.mips for v in vms], dtype=float)
        self.vm_weight = np.array([v.weight for v in vms], dtype=float)
        self.vm_cap = np.array([v.cap for v in vms], dtype=float)
        self.sched_overhead, self.ht_yield = sched_overhead, ht_yield
        self.wake_wait_full, self.wake_wait_over = wake_wait

    # ---------------------------------------------------------------- commands
    def set_vm_cpu(self, vm: int, weight: float, cap: float) -> None:
        """A VM's credit-scheduler weight (when > 0) and cap (when >= 0; 0: none), as ``xl sched-credit``."""
        if weight > 0:
            self.vm_weight[vm] = weight
        if cap >= 0:
            self.vm_cap[vm] = cap

    def set_dom0_weight(self, host: int, weight: float) -> None:
        """Dom0's credit-scheduler weight on the host."""
        self.dom0_weight[host] = weight

    def size_vm(self, vm: int, vcpus: float) -> None:
        """The VM's vCPU count (a trace that sizes its VM)."""
        self.vm_vcpus[vm] = vcpus

    # ---------------------------------------------------------------- queries
    def vm_cpu_limit(self) -> np.ndarray:
        """Cores each VM may use: its vCPUs, or its cap when lower."""
        lim = self.vm_vcpus.copy()
        capped = self.vm_cap > 0
        lim[capped] = np.minimum(lim[capped], self.vm_cap[capped])
        return lim

    def share(self, vm_host: np.ndarray, vm_dem: np.ndarray, dom0_dem: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cores each VM and each host's Dom0 get, shared per host by weight (``weighted_share``)."""
        n_hosts, n_vms = len(self.host_cores), len(vm_dem)
        group = np.concatenate([vm_host, np.arange(n_hosts)])
        dem = np.concatenate([vm_dem, dom0_dem])
        wt = np.concatenate([self.vm_weight, self.dom0_weight])
        alloc = weighted_share(group, dem, wt, self.host_cores)
        return alloc[:n_vms], alloc[n_vms:]

    def runnable(self, vm_host: np.ndarray, vm_dem: np.ndarray) -> Runnable:
        """Runnable vCPUs on average, per VM (its demand over what a vCPU of it is in cores of its host) and
        summed per host: a vCPU counts for the share of time it wants to run (busy 20 % of the time: 0.2)."""
        per_vm = vm_dem * self.vm_vcpus / self.vcpu_cores(np.arange(len(vm_dem)), vm_host)
        return Runnable(per_vm, np.bincount(vm_host, weights=per_vm, minlength=len(self.host_cores)))

    def stretch(self, runnable: Runnable) -> np.ndarray:
        """Run-queue slowdown of work per host: 1 + k * max(0, runnable vCPUs / threads - 1), so lightly
        loaded vCPUs crowd the queue only in numbers."""
        return 1.0 + self.sched_overhead * np.maximum(runnable.per_host / self.host_cores - 1.0, 0.0)

    def wake_waits(
        self, vm_host: np.ndarray, runnable: Runnable, dom0_alloc: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """What a wake-up waits for a hardware thread (s), per VM for a request that wakes it and per host
        for a packet that wakes Dom0's forwarding thread.

        A VM: with x the runnable vCPUs of its host's other VMs and Dom0 per thread and T its threads,
        ``wake_wait`` x min(x, 1)^T + ``wake_wait_over`` x max(x - 1, 0). A waking vCPU waits when it finds
        every thread busy (each busy with the chance x), and behind more of them the more they exceed the
        threads (the lab's measurement on Linux's scheduler: docs/simulator.md).
        Dom0: its forwarding thread (netback on Xen, vhost on KVM) sleeps between packets and a packet wakes
        it as a request wakes an idle guest, so the same wait with x the guests' runnable vCPUs per thread.
        """
        threads = self.host_cores[vm_host]
        others = ((runnable.per_host + dom0_alloc)[vm_host] - runnable.per_vm) / threads
        guests = runnable.per_host / self.host_cores
        return self._thread_wait(others, threads), self._thread_wait(guests, self.host_cores)

    def _thread_wait(self, busy_per_thread: np.ndarray, threads: np.ndarray) -> np.ndarray:
        """The wake-up wait for a thread with x runnable vCPUs per thread beside it (``wake_wait``)."""
        all_busy = np.minimum(busy_per_thread, 1.0) ** threads
        return self.wake_wait_full * all_busy + self.wake_wait_over * np.maximum(busy_per_thread - 1.0, 0.0)

    def thread_speed(self, vm_host: np.ndarray, vm_alloc: np.ndarray, dom0_alloc: np.ndarray) -> np.ndarray:
        """Work per busy hardware thread per host (1: a whole core's). With more busy threads B than
        physical cores P, siblings share cores: the host does P + (B - P) * ht_yield cores' work, spread
        over the B threads. CPU time counts threads, so this slowdown shows in job times, not counters."""
        busy = np.bincount(vm_host, weights=vm_alloc, minlength=len(self.host_cores)) + dom0_alloc
        physical = self.host_cores / self.threads_per_core
        work = physical + (busy - physical) * self.ht_yield
        return np.where(busy > physical, work / np.maximum(busy, 1e-300), 1.0)

    def vcpu_cores(self, vms: np.ndarray, vm_host: np.ndarray) -> np.ndarray:
        """Host cores the VMs' vCPUs use at 100 %: their MIPS over the host's per-core MIPS where the VM
        states its MIPS (a 1,000-MIPS vCPU on a 2,660-MIPS core uses 0.376 of it), else a whole core."""
        stated = self.vm_mips[vms] > 0
        share = self.vm_mips[vms] / self.host_core_mips[vm_host[vms]]
        return self.vm_vcpus[vms] * np.where(stated, share, 1.0)
