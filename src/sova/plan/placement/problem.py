"""A placement problem: what the Virtue paper's optimizers read (its Table I) and the limits a plan keeps.

CPU demand per VM in cores against host cores; each VM's NIC rates; the VM-to-VM traffic matrix (bit/s,
sparse); the fabric as host groups (``fabric.Levels``); at most ``slots`` VMs per host (the paper: 4)
and memory (the paper ignores RAM; a migration plan may not).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csc_matrix, csr_matrix

from sova.model.placement_rules import BoundRules
from sova.plan.placement.fabric import Levels


class PlacementError(ValueError):
    """A problem no placement can satisfy, said with what does not fit."""


@dataclass
class PlacementProblem:
    vm_names: tuple[str, ...]
    host_names: tuple[str, ...]
    cpu: np.ndarray  # cores each VM uses
    host_cores: np.ndarray
    traffic: csr_matrix  # bit/s from VM i to VM j (i != j)
    levels: Levels
    slots: int = 4  # VMs a host may hold (0: no limit)
    memory: np.ndarray | None = None  # MiB per VM
    host_memory: np.ndarray | None = None
    external_tx: np.ndarray | None = None  # bit/s each VM sends outside the VMs of the problem
    external_rx: np.ndarray | None = None
    rules: BoundRules | None = None  # the placement rules over these VMs and hosts (None: none)
    _csc: csc_matrix | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        V = len(self.vm_names)
        self.traffic = csr_matrix(self.traffic, shape=(V, V))
        self.traffic.setdiag(0)
        self.traffic.eliminate_zeros()
        if self.external_tx is None:
            self.external_tx = np.zeros(V)
        if self.external_rx is None:
            self.external_rx = np.zeros(V)

    @property
    def n_vms(self) -> int:
        return len(self.vm_names)

    @property
    def n_hosts(self) -> int:
        return len(self.host_names)

    @property
    def traffic_csc(self) -> csc_matrix:
        if self._csc is None:
            self._csc = self.traffic.tocsc()
        return self._csc

    def allowed(self, v: int, x: np.ndarray) -> np.ndarray | None:
        """Per host: VM v may be there under the must rules, the others placed as x says (-1: not yet);
        None when no rule binds it."""
        if self.rules is None or not self.rules.rules_of(self.vm_names[v]):
            return None
        return self.rules.allowed(self.vm_names[v], x)

    def breaks(self, v: int, x: np.ndarray) -> bool:
        """Whether VM v where x puts it breaks a must rule."""
        allowed = self.allowed(v, x)
        return allowed is not None and not allowed[x[v]]

    def nic_tx(self) -> np.ndarray:
        """Each VM's NIC transmit rate: to other VMs and outside."""
        return np.asarray(self.traffic.sum(axis=1)).ravel() + self.external_tx

    def nic_rx(self) -> np.ndarray:
        return np.asarray(self.traffic.sum(axis=0)).ravel() + self.external_rx

    def capacity(self) -> np.ndarray:
        """VMs each host may take (slots, or all VMs when unlimited)."""
        return np.full(self.n_hosts, self.slots if self.slots > 0 else self.n_vms)

    def check(self) -> None:
        """Refuse problems without any feasible placement, naming what does not fit."""
        if self.n_hosts == 0:
            raise PlacementError("no hosts to place VMs on")
        if self.slots > 0 and self.n_vms > self.slots * self.n_hosts:
            raise PlacementError(
                f"{self.n_vms} VMs do not fit in {self.n_hosts} hosts of {self.slots} slots ({self.slots * self.n_hosts})"
            )
        if self.memory is not None and self.host_memory is not None:
            big = np.flatnonzero(self.memory > self.host_memory.max())
            if len(big):
                v = int(big[0])
                raise PlacementError(
                    f"VM {self.vm_names[v]} needs {self.memory[v]:.0f} MiB; the largest host has "
                    f"{self.host_memory.max():.0f} MiB"
                )
            if self.memory.sum() > self.host_memory.sum():
                raise PlacementError(
                    f"the VMs need {self.memory.sum():.0f} MiB in all; the hosts have {self.host_memory.sum():.0f} MiB"
                )
