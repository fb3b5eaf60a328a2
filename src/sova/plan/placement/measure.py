"""Measure (the first step of Virtue's cycle): a placement problem from the Knowledge alone.

Over the last ``window`` seconds: each VM's CPU in cores, the VM-to-VM traffic matrix from the flow
counters (as Open vSwitch counts them), what each VM exchanges with the outside (its NIC counters minus
what the matrix explains), the hosts' cores and memory, and the fabric from the inventory. Only what a
real deployment observes; never the simulator's demands.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix, csr_matrix

from sova.model.knowledge import Knowledge
from sova.model.snapshot import Snapshot, counter_rate
from sova.plan.placement.fabric import levels_for
from sova.plan.placement.problem import PlacementError, PlacementProblem


def traffic_matrix(old: Snapshot, new: Snapshot) -> csr_matrix:
    """VM-to-VM bit/s between two snapshots (old indexed like new), from the flow counters."""
    V = len(new.vms)
    rate = counter_rate(old, new, "flow_bytes", scale=8)
    src, dst = new.flow_src, new.flow_dst
    inside = (dst >= 0) & (dst != src)
    return coo_matrix((rate[inside], (src[inside], dst[inside])), shape=(V, V)).tocsr()


def problem_from_knowledge(knowledge: Knowledge, window: float, slots: int) -> PlacementProblem:
    w = knowledge.window(window)
    if w is None:
        raise PlacementError(f"fewer than two observations in the last {window:g} s: nothing to measure yet")
    if knowledge.topology is None:
        raise PlacementError("the inventory has no fabric (topology): network-aware placement needs it")
    old, new = w  # old is indexed like new, even if VMs came or went in the window
    cpu = counter_rate(old, new, "cpu_time")
    traffic = traffic_matrix(old, new)
    tx = counter_rate(old, new, "guest_tx_bytes", scale=8)
    rx = counter_rate(old, new, "guest_rx_bytes", scale=8)
    ext_tx = np.maximum(0.0, tx - np.asarray(traffic.sum(axis=1)).ravel())  # NIC traffic the matrix leaves out
    ext_rx = np.maximum(0.0, rx - np.asarray(traffic.sum(axis=0)).ravel())
    return PlacementProblem(
        vm_names=new.vms,
        host_names=new.hosts,
        cpu=np.maximum(cpu, 0.0),
        host_cores=new.host_cores.astype(float),
        traffic=traffic,
        levels=levels_for(knowledge.topology, len(new.hosts), new.nic_bandwidth),
        slots=slots,
        memory=new.vm_memory.astype(float),
        host_memory=new.host_memory.astype(float),
        external_tx=ext_tx,
        external_rx=ext_rx,
        rules=knowledge.rules.bind(new.vms, new.hosts) if knowledge.rules else None,
    )
