"""Faults short of a host crash: a host's NIC (its port to the fabric) going down, its SR-IOV VFs failing,
and its reports stopping for a while (a sensor gap) while it runs on.

- A down NIC carries nothing, both ways, VF traffic included (the VFs are the NIC's): the host's VMs are
  cut off from every other host and the outside; traffic between VMs on the host goes on.
- Failed VFs: every VM on a VF of the host falls back to its para-virtual standby at once (net_failover),
  and the NIC offers no VF until the VFs recover.
- A sensor gap: the host runs as before but reports nothing; ``host_seen`` keeps the time of its last
  report (the driver shows what that report held). A host silent for ``[control] failure_grace`` is
  declared failed; its VMs, still running and holding their disks, cannot be restarted elsewhere (a
  restart fails, as a disk lock would make it), and the host is taken back when it reports again.

A part of ``Simulator`` (sim/engine.py).
"""

from __future__ import annotations

import numpy as np

from sova.sim.records import SimError


class NetworkFaults:
    def _init_network_faults(self) -> None:
        self.nic_up = np.ones(self.n_hosts, dtype=bool)
        self.vfs_failed = np.zeros(self.n_hosts, dtype=bool)
        self._vf_count = self.max_vfs.copy()  # what each NIC offers when its VFs work
        self.silent_until = np.zeros(self.n_hosts)  # a host reports again from this time on

    def nic_down(self, host: int) -> None:
        """The host's port stops carrying traffic."""
        if not self.nic_up[host]:
            raise SimError(f"{self.host_names[host]}'s NIC is down already")
        self._set_nic(host, False)

    def nic_up_again(self, host: int) -> None:
        if self.nic_up[host]:
            raise SimError(f"{self.host_names[host]}'s NIC is not down")
        self._set_nic(host, True)

    def _set_nic(self, host: int, up: bool) -> None:
        self.nic_up[host] = up
        eff = self.params["protocol_efficiency"]
        bandwidth = self.nic_bw[host] * eff if up else 0.0
        self.static_cap[self.layout.nic_tx + host] = bandwidth
        self.static_cap[self.layout.nic_rx + host] = bandwidth

    def fail_vfs(self, host: int) -> None:
        """The NIC's VFs fail: its VMs on a VF go on through their vNICs; no VF is offered until recovery."""
        if self.vfs_failed[host]:
            raise SimError(f"{self.host_names[host]}'s VFs have failed already")
        self.vfs_failed[host] = True
        on_vf = np.flatnonzero(self.vm_vf & (self.vm_host == host))
        for vm in on_vf:
            self.vm_vf[vm] = False
            self._moved_vms.add(int(vm))
            self.vf_log.append((self.t, self.vm_names[vm], self.host_names[host], "failed"))
        self.vf_pending = [(due, vm) for due, vm in self.vf_pending if self.vm_host[vm] != host]
        for vm in [vm for vm in self.vf_plugging if self.vm_host[vm] == host]:
            del self.vf_plugging[vm]
        self.vf_used[host] = 0
        self.max_vfs[host] = 0
        self._routes_dirty = True

    def recover_vfs(self, host: int) -> None:
        if not self.vfs_failed[host]:
            raise SimError(f"{self.host_names[host]}'s VFs have not failed")
        self.vfs_failed[host] = False
        self.max_vfs[host] = self._vf_count[host]

    def silence(self, host: int, seconds: float) -> None:
        """The host reports nothing for `seconds` from now."""
        self.silent_until[host] = max(self.silent_until[host], self.t + seconds)

    def reporting(self) -> np.ndarray:
        """Per host: it reports (it is up and not in a sensor gap)."""
        return ~self.host_failed & (self.silent_until <= self.t + 1e-9)
