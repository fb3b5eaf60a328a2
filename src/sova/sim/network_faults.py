"""A host's NIC (its port to the fabric) going down and coming back.

A down NIC carries nothing, both ways, VF traffic included (the VFs are the NIC's): the host's VMs are
cut off from every other host and the outside; traffic between VMs on the host goes on. (A NIC's VFs
failing is sim/sriov_vfs.py's; a host that stops reporting, sim/host_faults.py's.)

A subsystem of ``Simulator`` (sim/engine.py) that owns which NICs are up; it sets their capacity in the
network's fixed capacities (``static_cap``, shared with sim/network.py), which the max-min solve reads.
"""

from __future__ import annotations

import numpy as np

from sova.sim.datapath import Layout
from sova.sim.records import SimError


class NetworkFaults:
    """Which hosts' NICs are up."""

    def __init__(self, host_names: list[str], nic_cap: np.ndarray, layout: Layout, static_cap: np.ndarray):
        """nic_cap: each NIC's usable bit/s when up; static_cap: the capacities it sets (per layout)."""
        self.host_names, self.nic_cap, self.layout, self.static_cap = host_names, nic_cap, layout, static_cap
        self.up = np.ones(len(host_names), dtype=bool)

    def nic_down(self, host: int) -> None:
        """The host's port stops carrying traffic."""
        if not self.up[host]:
            raise SimError(f"{self.host_names[host]}'s NIC is down already")
        self._set(host, up=False)

    def nic_up_again(self, host: int) -> None:
        if self.up[host]:
            raise SimError(f"{self.host_names[host]}'s NIC is not down")
        self._set(host, up=True)

    def _set(self, host: int, up: bool) -> None:
        self.up[host] = up
        bandwidth = self.nic_cap[host] if up else 0.0
        self.static_cap[self.layout.nic_tx + host] = bandwidth
        self.static_cap[self.layout.nic_rx + host] = bandwidth
