"""Where VMs start when the simulator places them by least power rise, as CloudSim's power-aware allocation
policies create them (PABFD at creation, Beloglazov and Buyya, CCPE 2012; docs/cloudsim-reference.md §3):
each VM there at the start, in the scenario's order, goes to the host whose power rises least, from idle
(no host has load yet), with its full MIPS and memory reserved on top of the VMs created there before it,
among the hosts with the memory and the MIPS free and cores at least as fast as its vCPUs; ties go to the
first host. Fresh hosts are cheap, so this spreads VMs; the consolidation rounds then pack them. CloudSim
also runs the overload detector on the host after the VM's creation, but then only the new VM asks for CPU,
and no VM of the PlanetLab study asks for more than 70 % of a host it fits on: that test is left out.
``[simulator] initial_placement = "least-power"`` asks for it (the scenario's own placement otherwise).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from sova.model.initial_placement import CpuReserved
from sova.model.power_models import power_at
from sova.model.scenario import HostSpec, VmSpec
from sova.sim.records import SimError


def least_power_start(hosts: tuple[HostSpec, ...], vms: tuple[VmSpec, ...], curves: np.ndarray) -> tuple[VmSpec, ...]:
    """The VMs with the hosts PABFD gives them at creation (VMs that come later keep theirs)."""
    cpu = CpuReserved(hosts)
    memory_free = np.array([host.memory - host.dom0_memory for host in hosts], dtype=float)
    idle = power_at(curves, np.zeros(len(hosts)))
    out = []
    for vm in vms:
        if vm.comes_later:
            out.append(vm)
            continue
        fits = (memory_free >= vm.memory) & cpu.room(vm)
        if not fits.any():
            raise SimError(f"{vm.name} fits on no host at creation (its memory and MIPS free on cores as fast)")
        after = (cpu.reserved + cpu.need(vm)[1]) / cpu.capacity
        rise = np.where(fits, power_at(curves, after) - idle, np.inf)
        host = int(np.argmin(rise))  # the first of equal rises
        cpu.reserve(vm, host)
        memory_free[host] -= vm.memory
        out.append(dataclasses.replace(vm, host=hosts[host].name))
    return tuple(out)
