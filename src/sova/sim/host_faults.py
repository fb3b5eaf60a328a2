"""Host crashes and recoveries, VMs down with their host or booting after a restart, and hosts that stop
reporting for a while (a sensor gap).

A crashed host stops at once: it draws its off power, counts nothing and stops reporting (``seen``
keeps the time of its last report, which is what a manager sees of a failure). Its VMs are down: they
stay on it, run nothing and keep their counters as they were. A restarted VM boots on its new host in
``RESTART_TIME`` seconds. A recovered host boots (``off_wake_time``) and its VMs that were not restarted
elsewhere start on it again (libvirt's autostart), once it is on.

A sensor gap: the host runs as before but reports nothing; ``seen`` keeps the time of its last report
(the driver shows what that report held). A host silent for ``[control] failure_grace`` is declared
failed; its VMs, still running and holding their disks, cannot be restarted elsewhere (a restart fails,
as a disk lock would make it), and the host is taken back when it reports again.

A subsystem of ``Simulator`` (sim/engine.py) that owns its state. The engine's ``crash_host`` and
``restart_vm`` (sim/hypervisor_ops.py) end the migrations a crash cuts and check the restart's host.
"""

from __future__ import annotations

import numpy as np

from sova.sim.host_power import HostPower
from sova.sim.records import SimError
from sova.sim.vm_inventory import VmInventory

RESTART_TIME = 30.0  # s from a restart to the guest running (a boot)


class HostFaults:
    """Which hosts crashed or are silent, and which VMs are down or booting."""

    def __init__(self, host_names: list[str], vm_names: list[str], vms: VmInventory, power: HostPower):
        n_hosts, n_vms = len(host_names), len(vm_names)
        self.host_names, self.vm_names, self.vms, self.power = host_names, vm_names, vms, power
        self.failed = np.zeros(n_hosts, dtype=bool)
        self.seen = np.zeros(n_hosts)  # driver time of each host's latest report
        self.silent_until = np.zeros(n_hosts)  # a host reports again from this time on
        self.vm_down = np.zeros(n_vms, dtype=bool)  # on a crashed host, or booting after a restart
        self.vm_up_at = np.full(n_vms, np.inf)  # booting: when it runs
        self.restarts: list[tuple[float, str, str, str]] = []  # (time, VM, from host, to host)

    def require_up(self, host: int) -> None:
        if self.failed[host]:
            raise SimError(f"{self.host_names[host]} has crashed")

    def crash(self, host: int) -> None:
        """The host stops now, with its VMs (the engine has ended the migrations that touch it)."""
        self.failed[host] = True
        self.power.crash(host)
        on_it = self.vms.host == host
        self.vm_down |= on_it & self.vms.present
        self.vm_up_at[self.vm_down & on_it] = np.inf
        self.vms.routes_dirty = True

    def recover(self, host: int, t: float) -> None:
        """The host boots again; its VMs not restarted elsewhere start on it once it is on."""
        if not self.failed[host]:
            raise SimError(f"{self.host_names[host]} has not crashed")
        self.failed[host] = False
        stayed = self.vm_down & (self.vms.host == host)
        self.vm_up_at[stayed] = self.power.boot(host, t)

    def require_restartable(self, vm: int) -> None:
        if not (self.vm_down[vm] and self.failed[self.vms.host[vm]]):
            name = self.vm_names[vm]
            raise SimError(f"{name} is not down on a crashed host: it runs on, holding its disks; not restarted")

    def restarted(self, vm: int, src: int, t: float) -> None:
        """The VM, moved from `src` to its new host, boots there."""
        self.vm_up_at[vm] = t + RESTART_TIME
        self.restarts.append((t, self.vm_names[vm], self.host_names[src], self.host_names[self.vms.host[vm]]))

    def restart_state(self, vm: int) -> str:
        """'running', 'booting', or 'down'."""
        if not self.vm_down[vm]:
            return "running"
        return "booting" if np.isfinite(self.vm_up_at[vm]) else "down"

    def silence(self, host: int, seconds: float, t: float) -> None:
        """The host reports nothing for `seconds` from `t`."""
        self.silent_until[host] = max(self.silent_until[host], t + seconds)

    def reporting(self, t: float) -> np.ndarray:
        """Per host: it reports (it is up and not in a sensor gap)."""
        return ~self.failed & (self.silent_until <= t + 1e-9)

    def advance(self, t: float) -> None:
        """VMs whose boot is over run."""
        up = self.vm_down & (self.vm_up_at <= t + 1e-9) & self.power.is_on()[self.vms.host]
        if up.any():
            self.vm_down[up] = False
            self.vm_up_at[up] = np.inf
            self.vms.routes_dirty = True
