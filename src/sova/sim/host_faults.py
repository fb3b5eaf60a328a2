"""Host crashes and recoveries, and restarting a crashed host's VMs elsewhere (HA restart).

A crashed host stops at once: it draws its off power, counts nothing and stops reporting (``host_seen``
keeps the time of its last report, which is what a manager sees of a failure). Its VMs are down: they
stay on it, run nothing and keep their counters as they were. Migrations from or to it are cancelled (a VM
migrating away from it is down with it). ``restart_vm`` boots a down VM on a host that is on, from its
disks on shared storage, in ``restart_time`` seconds; it comes up on its vNIC (a VF belonged to the
crashed host's NIC). A recovered host boots (``off_wake_time``) and its VMs that were not restarted
elsewhere start on it again (libvirt's autostart), once it is on.

A part of ``Simulator`` (sim/engine.py).
"""

from __future__ import annotations

import numpy as np

from sova.sim.records import SimError

RESTART_TIME = 30.0  # s from a restart to the guest running (a boot)


class HostFaults:
    def _init_host_faults(self) -> None:
        self.host_failed = np.zeros(self.n_hosts, dtype=bool)
        self.host_seen = np.zeros(self.n_hosts)  # driver time of each host's latest report
        self.vm_down = np.zeros(self.n_vms, dtype=bool)  # on a crashed host, or booting after a restart
        self.vm_up_at = np.full(self.n_vms, np.inf)  # booting: when it runs
        self.restarts: list[tuple[float, str, str, str]] = []  # (time, VM, from host, to host)

    def crash_host(self, host: int) -> None:
        """The host stops now, with its VMs."""
        if self.host_failed[host]:
            raise SimError(f"{self.host_names[host]} has crashed already")
        for vm in self.migrations.touching(host):
            on_it = self.migrations.under_way[vm][0].src == host
            self._finish_migration(vm, "failed")
            self.vm_down[vm] |= on_it
        self.host_failed[host] = True
        self.power.crash(host)
        self.vm_down |= (self.vm_host == host) & self.vm_present
        self.vm_up_at[self.vm_down & (self.vm_host == host)] = np.inf
        self._routes_dirty = True

    def recover_host(self, host: int) -> None:
        """The host boots again; its VMs not restarted elsewhere start on it once it is on."""
        if not self.host_failed[host]:
            raise SimError(f"{self.host_names[host]} has not crashed")
        self.host_failed[host] = False
        stayed = self.vm_down & (self.vm_host == host)
        self.vm_up_at[stayed] = self.power.boot(host, self.t)

    def restart_vm(self, vm: int, host: int) -> None:
        """Boot a down VM of a crashed host on `host` (on, with the memory for it)."""
        name, where = self.vm_names[vm], self.host_names[host]
        if not (self.vm_down[vm] and self.host_failed[self.vm_host[vm]]):
            raise SimError(f"{name} is not down on a crashed host: it runs on, holding its disks; not restarted")
        if self.host_failed[host]:
            raise SimError(f"{where} has crashed")
        self.power.require_on(host)
        self.require_room(host, vm)
        src = int(self.vm_host[vm])
        if self.vm_vf[vm]:
            self.vm_vf[vm] = False
            self.vf_used[src] -= 1
        self._move(vm, host)
        self.vm_up_at[vm] = self.t + RESTART_TIME
        self.restarts.append((self.t, name, self.host_names[src], where))
        self.inventory_version += 1

    def restart_state(self, vm: int) -> str:
        """'running', 'booting', or 'down'."""
        if not self.vm_down[vm]:
            return "running"
        return "booting" if np.isfinite(self.vm_up_at[vm]) else "down"

    def _advance_host_faults(self, t: float) -> None:
        """VMs whose boot is over run."""
        up = self.vm_down & (self.vm_up_at <= t + 1e-9) & self.power.is_on()[self.vm_host]
        if up.any():
            self.vm_down[up] = False
            self.vm_up_at[up] = np.inf
            self._routes_dirty = True
