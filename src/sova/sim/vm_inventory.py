"""What runs where: each VM's host, whether it is there, its memory and its NIC mode.

The simulator's subsystems share this one record of placement (the network routes by it, compute shares
CPU by it, the lifecycle, migrations and faults change it). A change of host or NIC mode is marked so
that only the flows of the VMs that moved are routed again; a VM that comes or goes bumps ``version``,
the driver's cue to list the inventory again.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sova.model.scenario import HostSpec, VmSpec

MEM_USED_DEFAULT = 0.4  # share of a guest's memory in use when no workload says


class VmInventory:
    """The placement of every VM of the scenario (a row each from the start) on its hosts."""

    def __init__(self, hosts: Sequence[HostSpec], vms: Sequence[VmSpec], storage_names: Sequence[str]):
        host_index = {h.name: i for i, h in enumerate(hosts)}
        storage_index = {n: i for i, n in enumerate(storage_names)}
        self.host_memory = np.array([h.memory - h.dom0_memory for h in hosts], dtype=float)  # MiB for guests
        self.host = np.array([host_index.get(v.host, 0) for v in vms], dtype=np.int64)  # unplaced: none yet
        self.present = np.zeros(len(vms), dtype=bool)  # there now (the lifecycle says who is at the start)
        self.memory = np.array([v.memory for v in vms], dtype=float)  # MiB
        self.memory_used = self.memory * MEM_USED_DEFAULT  # until the workloads say
        self.dirty_rate = np.array([v.dirty_rate for v in vms], dtype=float)  # bytes/s
        self.wss = np.array([v.wss * 1024**2 for v in vms], dtype=float)  # bytes
        self.storage = np.array([storage_index.get(v.storage, 0) for v in vms], dtype=np.int64)
        self.on_vf = np.array([v.nic == "vf" for v in vms], dtype=bool)  # traffic through an SR-IOV VF
        self.moved: set[int] = set()  # VMs whose host or NIC mode changed since the last routing
        self.routes_dirty = True  # some flow must be routed again
        self.version = 0

    def move(self, vm: int, host: int) -> None:
        """The VM runs on `host` now (its flows are routed again when the routes are next rebuilt, which
        this does not ask for: a migration's end does)."""
        self.host[vm] = host
        self.moved.add(vm)

    def reroute(self, vm: int) -> None:
        """The VM's host or NIC mode changed: route its flows again."""
        self.moved.add(vm)
        self.routes_dirty = True

    def on_host(self, host: int) -> np.ndarray:
        """Per VM: it is there and on `host`."""
        return (self.host == host) & self.present
