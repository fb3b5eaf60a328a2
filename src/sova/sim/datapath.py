"""Network datapaths: which resources a flow uses, and how much of each per bit.

Resources, in one index space: fabric links; per host NIC transmit and receive (the physical
function's bandwidth, shared by hardware arbitration between the VFs and the para-virtual path);
per host Dom0 CPU (seconds of CPU per bit); per VM its netback thread (Xen); per VM the VF transmit
rate cap; per VM the vNIC transmit limit (tc on the tap).

- vNIC (para-virtual): every packet crosses the host's Dom0 (netback), costing Dom0 CPU per packet
  and per byte; two vNICs on one host talk through the Dom0 bridge, paying Dom0 twice and never
  touching the NIC (so local VM-to-VM traffic is bounded by Dom0).
- On Xen hosts one Dom0 kernel thread serves all of a vif's packets, both ways (netback before Linux
  3.16 had no multi-queue), so a vNIC carries at most what one Dom0 vCPU forwards: each para-virtual
  end on a Xen host adds its VM's netback resource (capacity one core) at the same cost per bit.
- VF (SR-IOV): bypasses Dom0; the NIC's embedded switch loops VF traffic between VMs of one host.
- The NIC's transmit arbitration serves each active VF and the para-virtual path (the physical
  function's queues) as peers: ``arbitration_weights`` gives each para-virtual flow on a NIC that has
  active VFs the weight 1/(its para-virtual flows), so the para-virtual path counts as one entity.
- Migration and storage streams start and end in Dom0 itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VM, DOM0, NODE, VM_DOM0 = 0, 1, 2, 3  # VM_DOM0: the Dom0 of whichever host runs the VM now


@dataclass
class Layout:
    """Offsets of each resource family in the resource index space."""

    n_links: int
    n_hosts: int
    n_vms: int

    @property
    def nic_tx(self) -> int:
        return self.n_links

    @property
    def nic_rx(self) -> int:
        return self.n_links + self.n_hosts

    @property
    def dom0(self) -> int:
        return self.n_links + 2 * self.n_hosts

    @property
    def netback(self) -> int:
        return self.n_links + 3 * self.n_hosts

    @property
    def vf(self) -> int:
        return self.n_links + 3 * self.n_hosts + self.n_vms

    @property
    def netlim(self) -> int:
        return self.n_links + 3 * self.n_hosts + 2 * self.n_vms

    @property
    def size(self) -> int:
        return self.n_links + 3 * self.n_hosts + 3 * self.n_vms


@dataclass
class Route:
    """A flow's resources with coefficients, the Dom0 crossings among them, and fixed latency."""

    resources: np.ndarray
    coef: np.ndarray
    dom0_host: np.ndarray  # per entry: host whose Dom0 (or one of its netback threads) this entry is, else -1
    crossings: np.ndarray  # per entry: netback crossings (1 or 2) for Dom0 entries, else 1
    latency: float
    src_pv: bool
    dst_pv: bool
    src_host: int
    dst_host: int
    tx_host: int  # host whose NIC transmits it (-1: none)
    tx_vf: bool  # transmitted from a VF (else from the physical function's para-virtual path)


def route(
    layout: Layout,
    topology,
    src: tuple[int, int],
    dst: tuple[int, int],
    vm_host: np.ndarray,
    vm_vf: np.ndarray,
    netback_hosts: np.ndarray,
    dom0_cost_bit: float,
    pv_latency: float,
    vf_latency: float,
    flow_hash: int,
) -> Route:
    """Resources of a flow from src to dst, each an (endpoint kind, id) pair; netback_hosts marks the
    hosts (Xen) whose vifs each have one netback thread."""
    res: list[int] = []
    coef: list[float] = []
    d0: list[int] = []
    cross: list[int] = []

    def add(r: int, c: float = 1.0, host: int = -1, n: int = 1) -> None:
        res.append(r)
        coef.append(c)
        d0.append(host)
        cross.append(n)

    def side(ep: tuple[int, int]) -> tuple[int, int, bool]:
        kind, i = ep
        if kind == VM:
            h = int(vm_host[i])
            return h, h, not bool(vm_vf[i])
        if kind == DOM0:
            return i, i, True
        if kind == VM_DOM0:
            h = int(vm_host[i])
            return h, h, True
        return -1, i, False

    hs, ns, s_pv = side(src)
    hd, nd, d_pv = side(dst)
    latency = 0.0
    tx_host = -1
    src_is_vm, dst_is_vm = src[0] == VM, dst[0] == VM
    if src_is_vm and s_pv:
        add(layout.netlim + src[1])
    if src_is_vm and not s_pv:
        add(layout.vf + src[1])
    for is_vm, pv, host, ep in ((src_is_vm, s_pv, hs, src), (dst_is_vm, d_pv, hd, dst)):
        if is_vm and pv and netback_hosts[host]:
            add(layout.netback + ep[1], dom0_cost_bit, host, 1)
    if hs >= 0 and hs == hd:
        if s_pv and d_pv:
            add(layout.dom0 + hs, 2 * dom0_cost_bit, hs, 2)
            latency += 2 * pv_latency
        else:
            add(layout.nic_tx + hs)
            add(layout.nic_rx + hs)
            tx_host = hs
            for pv in (s_pv, d_pv):
                if pv:
                    add(layout.dom0 + hs, dom0_cost_bit, hs, 1)
                latency += pv_latency if pv else vf_latency
    else:
        if hs >= 0:
            if s_pv:
                add(layout.dom0 + hs, dom0_cost_bit, hs, 1)
            add(layout.nic_tx + hs)
            tx_host = hs
            latency += pv_latency if s_pv else vf_latency
        for link in topology.path(ns, nd, flow_hash):
            add(int(link))
        latency += topology.latency(ns, nd)
        if hd >= 0:
            add(layout.nic_rx + hd)
            if d_pv:
                add(layout.dom0 + hd, dom0_cost_bit, hd, 1)
            latency += pv_latency if d_pv else vf_latency
    return Route(
        resources=np.asarray(res, dtype=np.int64),
        coef=np.asarray(coef, dtype=float),
        dom0_host=np.asarray(d0, dtype=np.int64),
        crossings=np.asarray(cross, dtype=np.int64),
        latency=latency,
        src_pv=src_is_vm and s_pv,
        dst_pv=dst_is_vm and d_pv,
        src_host=hs,
        dst_host=hd,
        tx_host=tx_host,
        tx_vf=src_is_vm and not s_pv,
    )


def arbitration_weights(active: np.ndarray, tx_host: np.ndarray, tx_vf: np.ndarray, n_hosts: int) -> np.ndarray | None:
    """Per-flow weights for weighted max-min, or None when no NIC has an active VF (plain fairness).

    The weight applies to the whole flow (fabric links included): an approximation that only matters
    for para-virtual flows leaving a host whose NIC also serves active VFs.
    """
    on_nic = active & (tx_host >= 0)
    vf_hosts = np.bincount(tx_host[on_nic & tx_vf], minlength=n_hosts) > 0
    if not vf_hosts.any():
        return None
    pv = on_nic & ~tx_vf
    n_pv = np.bincount(tx_host[pv], minlength=n_hosts)
    w = np.ones(len(active))
    sel = pv & vf_hosts[np.maximum(tx_host, 0)]
    w[sel] = 1.0 / n_pv[tx_host[sel]]
    return w
