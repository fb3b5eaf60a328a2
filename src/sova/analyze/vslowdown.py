"""CloudScope's V-slowdown model (the CloudScope paper, §III): how much co-resident VMs slow each other
down on a host, from what the host reports.

A job slice of a VM moves through a discrete-time Markov chain of states Dom0 → pCPU (→ Disk | Net);
each state is left with a probability that the host's load sets (Eq. 1-5, with Eq. 8 for Dom0's weight):

- Dom0, an M/G/1-PS server: p_Dom0 = (1 - ρ_Dom0) · w_Dom0 / mean(w_guest)   (Eq. 8; Eq. 1 at equal weights)
- pCPU: p_cpu = 1, or Σ pCPU / Σ util_i · vCPU_i when the CPUs are oversubscribed            (Eq. 2)
- the grant table (128 entries of 4 KB) for I/O: with k = ⌊Σ bs_i / 512 KB⌋, p'_cpu = 1 if k < 1,
  else p_cpu / (k + 1); disk counts reads and writes together, network each direction apart  (Eq. 3)
- Disk, FIFO: p_disk = (1 - ρ_disk) / ρ_disk once its queue ρ/(1-ρ) reaches 1, else 1     (Eq. 4)
  (with the queue Q = ρ/(1-ρ) measured, as hosts count it, this is 1/Q)
- Net: p_net = 1, or Σ pNIC / Σ util_i · vNIC_i when the NIC is oversubscribed              (Eq. 5)

The mean time to absorption of each chain is the sum of 1/p over its states; with every p = 1 it is 2
(CPU) or 3 (disk, network), so γ_r = E(K_r) / E'(K_r). A VM's V-slowdown is δ_j = Σ_r γ_r β_r,j (Eq. 7)
with β_j its loading vector (Eq. 6: the share of its time on each resource).

Choices where the paper leaves room, each stated: probabilities are capped at 1 (Eq. 8 with a heavy
Dom0 weight would exceed it) and Dom0's utilisation at RHO_MAX (so that a saturated Dom0 gives a large,
finite delay); the disk channel's utilisation is read from its queue, Q = ρ/(1-ρ), the relation Eq. 4
rests on (a host counts the queue: the time its VMs' requests spend outstanding per second, Little's
law), so a full disk shows how full, where a utilisation stops at 1; Σ bs_i sums one outstanding request
per VM doing that I/O (the paper's example: two VMs of 256 KB fill the 128 entries); the network's k is
the larger of the send and receive tables'.
Everything is a numpy array over hosts, so a prediction for 100,000 VMs, or for one VM on each of 10,000
hosts, is a handful of vector operations.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

RHO_MAX = 0.99
GRANT_TABLE_BYTES = 128 * 4096  # entries x page size: the I/O a host can have mapped at once
RESOURCES = ("cpu", "disk", "net")
UNSATURATED = np.array([2.0, 3.0, 3.0])  # E'(K): mean time to absorption with every p = 1


@dataclass(frozen=True)
class HostLoad:
    """What each host carries, as the V-slowdown model reads it (arrays over hosts).

    dom0_util: ρ_Dom0, Dom0's CPU use over its vCPUs; dom0_weight and guest_weight_mean: the scheduler
    weights of Eq. 8; cpu_capacity: Σ pCPU (cores); cpu_demand: Σ util_i · vCPU_i (cores); disk_bs,
    net_tx_bs, net_rx_bs: Σ bs_i (bytes) of one outstanding request per VM doing that I/O; disk_queue:
    the requests outstanding on the host's disk channel on average (Q = ρ_disk / (1 - ρ_disk));
    nic_capacity: Σ pNIC (bit/s); net_demand: Σ util_i · vNIC_i, the traffic the VMs wanted (bit/s,
    each direction: a NIC is full duplex)."""

    dom0_util: np.ndarray
    dom0_weight: np.ndarray
    guest_weight_mean: np.ndarray
    cpu_capacity: np.ndarray
    cpu_demand: np.ndarray
    disk_bs: np.ndarray
    net_tx_bs: np.ndarray
    net_rx_bs: np.ndarray
    disk_queue: np.ndarray
    nic_capacity: np.ndarray
    net_tx_demand: np.ndarray
    net_rx_demand: np.ndarray


def p_dom0(load: HostLoad) -> np.ndarray:
    """Eq. 8 (Eq. 1 when Dom0 weighs as much as the mean guest, or where either weight is unknown: NaN or
    not positive, as a host that reports no Dom0 weight)."""
    known = np.isfinite(load.dom0_weight) & (load.dom0_weight > 0) & (load.guest_weight_mean > 0)
    share = np.divide(load.dom0_weight, load.guest_weight_mean, out=np.ones(len(known)), where=known)
    return np.minimum((1.0 - np.minimum(load.dom0_util, RHO_MAX)) * share, 1.0)


def oversubscription(capacity: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """Eq. 2 and Eq. 5: 1 while demand fits, else capacity / demand."""
    over = demand > capacity
    return np.divide(capacity, demand, out=np.ones(np.broadcast(capacity, demand).shape), where=over)


def grant_table(total_bs: np.ndarray, p_cpu: np.ndarray) -> np.ndarray:
    """Eq. 3: the chance a request gets the grant table and reaches Dom0."""
    k = np.floor(total_bs / GRANT_TABLE_BYTES)
    return np.where(k < 1, 1.0, p_cpu / (k + 1))


def p_disk(disk_queue: np.ndarray) -> np.ndarray:
    """Eq. 4: 1 while the FIFO queue ρ/(1-ρ) is below one request, else (1-ρ)/ρ, which is 1/queue."""
    return np.where(disk_queue < 1.0, 1.0, 1.0 / np.maximum(disk_queue, 1.0))


def chain_times(load: HostLoad) -> tuple[np.ndarray, np.ndarray]:
    """Per host: the Dom0 state's mean time 1/p_Dom0, and each chain's time in its other states (hosts x 3)."""
    p_cpu = oversubscription(load.cpu_capacity, load.cpu_demand)
    p_cpu_disk = grant_table(load.disk_bs, p_cpu)
    p_cpu_net = grant_table(np.maximum(load.net_tx_bs, load.net_rx_bs), p_cpu)
    p_net = oversubscription(load.nic_capacity, np.maximum(load.net_tx_demand, load.net_rx_demand))
    rest = np.stack(
        [1.0 / p_cpu, 1.0 / p_cpu_disk + 1.0 / p_disk(load.disk_queue), 1.0 / p_cpu_net + 1.0 / p_net], axis=1
    )
    return 1.0 / p_dom0(load), rest


def gammas(load: HostLoad) -> np.ndarray:
    """γ_cpu, γ_disk, γ_net per host (hosts x 3): E(K_r) / E'(K_r)."""
    dom0, rest = chain_times(load)
    return (dom0[:, None] + rest) / UNSATURATED


def dom0_weight_needed(load: HostLoad, beta: np.ndarray, host: np.ndarray, slo: float) -> np.ndarray:
    """Per VM: the Dom0 weight its host needs for the VM's slowdown to stay within `slo` (Eq. 7 solved for
    1/p_Dom0, then Eq. 8 for the weight); NaN where no Dom0 weight can meet it (even p_Dom0 = 1 leaves
    the VM slower than the SLO: the cause is elsewhere)."""
    _, rest = chain_times(load)
    per_state = beta / UNSATURATED  # δ = 1/p_Dom0 · Σ β_r/E'_r + Σ β_r · rest_r / E'_r
    bound = (slo - (per_state * rest[host]).sum(axis=1)) / per_state.sum(axis=1)
    chance = 1.0 / np.maximum(bound, 1.0)
    idle = 1.0 - np.minimum(load.dom0_util, RHO_MAX)
    return np.where(bound > 1.0, chance * load.guest_weight_mean[host] / idle[host], np.nan)


def v_slowdown(gamma: np.ndarray, loading: np.ndarray, host: np.ndarray) -> np.ndarray:
    """Eq. 7 per VM: δ_j = Σ_r γ_r(host of j) β_r,j; loading is VMs x 3, host the VMs' host indices."""
    return (gamma[host] * loading).sum(axis=1)


@dataclass(frozen=True)
class VmLoad:
    """One VM's part in its host's load (the terms it adds to each sum of HostLoad)."""

    cpu_demand: float  # util · vCPU, cores
    disk_bs: float  # bytes of its outstanding disk request (0: no disk I/O)
    net_tx_bs: float
    net_rx_bs: float
    disk_queue: float  # requests it keeps outstanding on the disk channel, on average
    net_tx_demand: float  # bit/s
    net_rx_demand: float
    weight: float  # its scheduler weight
    dom0_util: float  # the Dom0 utilisation its I/O causes


def with_vm(load: HostLoad, vm: VmLoad, guests: np.ndarray, on: np.ndarray | float = 1.0) -> HostLoad:
    """The hosts' loads as they would be with `vm` added to each host where `on` is 1 (every host by
    default; guests: VMs on each host now, for the weights)."""
    return replace(
        load,
        dom0_util=load.dom0_util + vm.dom0_util * on,
        guest_weight_mean=np.divide(
            load.guest_weight_mean * guests + vm.weight * on,
            guests + on,
            out=np.broadcast_to(load.guest_weight_mean, np.broadcast(guests, on).shape).astype(float),
            where=(guests + on) > 0,  # a host with no guest and none added keeps its mean
        ),
        cpu_demand=load.cpu_demand + vm.cpu_demand * on,
        disk_bs=load.disk_bs + vm.disk_bs * on,
        net_tx_bs=load.net_tx_bs + vm.net_tx_bs * on,
        net_rx_bs=load.net_rx_bs + vm.net_rx_bs * on,
        disk_queue=load.disk_queue + vm.disk_queue * on,
        net_tx_demand=load.net_tx_demand + vm.net_tx_demand * on,
        net_rx_demand=load.net_rx_demand + vm.net_rx_demand * on,
    )


def slowdown_if_placed(load: HostLoad, vm: VmLoad, guests: np.ndarray, beta: np.ndarray, current: int) -> np.ndarray:
    """Algorithm 1's Predict(β_j, PM_k) for every host k at once: the VM's slowdown were it on k (on its
    current host, as it is now; -1: it has none yet)."""
    gamma = gammas(with_vm(load, vm, guests))
    if current >= 0:
        gamma[current] = gammas(_one(load, current))[0]
    return gamma @ beta


def _one(load: HostLoad, host: int) -> HostLoad:
    return HostLoad(**{name: getattr(load, name)[host : host + 1] for name in HostLoad.__dataclass_fields__})
