"""SR-IOV virtual functions: each host's NIC offers a number of VFs; a VM's VF is hot-plugged in
``vf_attach_time`` and unplugged in ``vf_detach_time``, each at its own rate cap; a NIC's VFs can fail.

While a VF is attaching, the VM's traffic stays on its para-virtual vNIC; a detach fails traffic over to
the vNIC at once and frees the VF when the unplug is over. Failed VFs: every VM on a VF of the host falls
back to its para-virtual standby at once (net_failover), and the NIC offers no VF until they recover.

A subsystem of ``Simulator`` (sim/engine.py) that owns its state; a VM's NIC mode (``on_vf``) is the
placement's (sim/vm_inventory.py), which routing reads. The engine checks what only it knows (the VM runs
and is not migrating) before an attach.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sova.model.scenario import HostSpec, VmSpec
from sova.sim.records import SimError
from sova.sim.vm_inventory import VmInventory

ATTACHING, DETACHING = "attaching", "detaching"


class SriovVfs:
    """The hosts' VFs, in use and offered, the hot-plugs under way and the log of what changed."""

    def __init__(
        self,
        hosts: Sequence[HostSpec],
        vm_specs: Sequence[VmSpec],
        vms: VmInventory,
        attach_time: float,
        detach_time: float,
    ):
        self.host_names, self.vm_names, self.vms = [h.name for h in hosts], [v.name for v in vm_specs], vms
        self.attach_time, self.detach_time = attach_time, detach_time
        self.count = np.array([h.nic.max_vfs if h.nic.sriov else 0 for h in hosts], dtype=np.int64)
        self.offered = self.count.copy()  # what each NIC offers now (none while its VFs have failed)
        self.failed = np.zeros(len(hosts), dtype=bool)
        self.used = np.zeros(len(hosts), dtype=np.int64)  # held: attached, or being plugged
        self.rate = np.array([v.vf_rate for v in vm_specs], dtype=float)  # each VM's VF cap, bit/s (0: none)
        self.pending: list[tuple[float, int]] = []  # (due time, vm) of each hot-plug under way
        self.plugging: dict[int, str] = {}  # VM -> ATTACHING | DETACHING while its hot-plug runs
        self.log: list[tuple[float, str, str, str]] = []  # (time, VM, host, 'attached' | 'detached' | 'failed')

    def count_used(self) -> None:
        """The VFs the VMs there at the start hold."""
        held = self.vms.host[self.vms.on_vf & self.vms.present]
        self.used = np.bincount(held, minlength=len(self.used)).astype(np.int64)

    def hold(self, host: int, for_whom: str = "") -> None:
        """Take one of the host's free VFs; refused if it has none."""
        if self.used[host] >= self.offered[host]:
            raise SimError(f"{self.host_names[host]} has no free VF{for_whom} ({self.offered[host]} in use)")
        self.used[host] += 1

    def attach(self, vm: int, rate: float, t: float) -> None:
        """Begin hot-plugging a VF capped at `rate` into the VM."""
        if self.vms.on_vf[vm] or vm in self.plugging:
            raise SimError(f"{self.vm_names[vm]} already has a VF (or one is being plugged)")
        self.hold(int(self.vms.host[vm]))
        self.rate[vm] = rate
        self.pending.append((t + self.attach_time, vm))
        self.plugging[vm] = ATTACHING

    def detach(self, vm: int, t: float) -> None:
        """Traffic fails over to the para-virtual standby at once; the VF is free after the unplug."""
        if not self.vms.on_vf[vm]:
            raise SimError(f"{self.vm_names[vm]} has no VF attached")
        self.vms.on_vf[vm] = False
        self.vms.reroute(vm)
        self.log.append((t, self.vm_names[vm], self.host_names[self.vms.host[vm]], "detached"))
        self.pending.append((t + self.detach_time, vm))
        self.plugging[vm] = DETACHING

    def set_rate(self, vm: int, rate: float) -> None:
        if not self.vms.on_vf[vm]:
            raise SimError(f"{self.vm_names[vm]} has no VF attached")
        self.rate[vm] = rate

    def state(self, vm: int) -> str:
        """'none', 'attaching', 'attached' or 'detaching' (the VF is unplugging, traffic is on the vNIC)."""
        return self.plugging.get(vm) or ("attached" if self.vms.on_vf[vm] else "none")

    def advance(self, t: float) -> None:
        """Finish the hot-plugs due by `t`."""
        due = [op for op in self.pending if op[0] <= t + 1e-9]
        if not due:
            return
        self.pending = [op for op in self.pending if op[0] > t + 1e-9]
        for _, vm in due:
            if self.plugging.pop(vm) == ATTACHING:
                self.vms.on_vf[vm] = True
                self.vms.reroute(vm)
                self.log.append((t, self.vm_names[vm], self.host_names[self.vms.host[vm]], "attached"))
            else:
                self.used[self.vms.host[vm]] -= 1

    def release(self, vm: int) -> None:
        """The VM is gone: its VF (attached or being plugged) is free now."""
        plugging = self.plugging.pop(vm, None)
        if plugging is not None:
            self.pending = [op for op in self.pending if op[1] != vm]
        if self.vms.on_vf[vm] or plugging is not None:
            self.used[self.vms.host[vm]] -= 1
        self.vms.on_vf[vm] = False

    def drop(self, vm: int) -> None:
        """The VM leaves its crashed host: the VF it had there is free (it comes up on its vNIC)."""
        if self.vms.on_vf[vm]:
            self.vms.on_vf[vm] = False
            self.used[self.vms.host[vm]] -= 1

    def fail(self, host: int, t: float) -> None:
        """The NIC's VFs fail: its VMs on a VF go on through their vNICs; no VF is offered until recovery."""
        if self.failed[host]:
            raise SimError(f"{self.host_names[host]}'s VFs have failed already")
        self.failed[host] = True
        for vm in np.flatnonzero(self.vms.on_vf & (self.vms.host == host)):
            self.vms.on_vf[vm] = False
            self.vms.reroute(int(vm))
            self.log.append((t, self.vm_names[vm], self.host_names[host], "failed"))
        self.pending = [(due, vm) for due, vm in self.pending if self.vms.host[vm] != host]
        for vm in [vm for vm in self.plugging if self.vms.host[vm] == host]:
            del self.plugging[vm]
        self.used[host] = 0
        self.offered[host] = 0
        self.vms.routes_dirty = True

    def recover(self, host: int) -> None:
        if not self.failed[host]:
            raise SimError(f"{self.host_names[host]}'s VFs have not failed")
        self.failed[host] = False
        self.offered[host] = self.count[host]
