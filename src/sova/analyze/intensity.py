"""How I/O- and network-intensive each VM is: the Sova paper's IF and NF and the SR-IOV paper's
io_degree and net_degree, computed from per-sample sensor data (``Samples``).

Sova paper (Raccoon's factors):
    IF = (1/num) * sum over samples of blocked_time / gotten_time                        (Eq. 1)
    NF = eps * Traffic_freq + (1 - eps) * Traffic_avg                                     (Eq. 2)
    Traffic_freq = traffic_num / num                                                      (Eq. 3)
    Traffic_avg = (1/traffic_num) * sum over samples with traffic of (traffic - min) / (max - min)  (Eq. 4)
traffic is the packets sent + received in a sample; a sample "has traffic" when it carries at least
``min_packets`` packets. min and max are the smallest and largest packet counts among the VM's own
samples in the window. Normalising per VM keeps NF independent of the rate the VM is given: a VF's rate
tier scales all its samples alike, so holding a VF neither raises nor lowers a VM's NF (with a
host-wide min/max, a capped VF holder would look less intensive than it is and VFs would flap). With
no traffic sample, or equal samples, Traffic_avg is 0 for no traffic and 1 for steady traffic.

SR-IOV paper:
    cpu_time_diff = cpuTime_now - cpuTime_ago                                             (Eq. 1)
    cpu_usage = cpu_time_diff / (time * nr_cores)                                         (Eq. 2)
    io_degree = 100 * (1 - cpu_usage)                                                     (Eq. 3)
    net_degree = eps * data_avg + (1 - eps) * traffic_freq                                (Eq. 4)
    data_avg = (1/num) * sum of traffic_data ;  traffic_freq = traffic_num / num          (Eq. 5, 6)
cpu_usage is a fraction here (the paper's percentage over 100); nr_cores is the VM's vCPU count, which
is what reproduces the paper's Table 2 (a VM running lookbusy all the time has io_degree 7.8, i.e. 92 %
of its own CPU). traffic_data is in KiB per sample.
"""

from __future__ import annotations

import numpy as np

from sova.analyze.samples import Samples

EPS_GOTTEN = 1e-9  # s; a sample with no CPU at all counts as this little, not as a division by zero


def io_factor(s: Samples) -> np.ndarray:
    """IF per VM (Eq. 1)."""
    return (s.blocked / np.maximum(s.gotten, EPS_GOTTEN)).mean(axis=0)


def traffic_samples(s: Samples, min_packets: float) -> np.ndarray:
    """Which samples carry network traffic (num x VMs)."""
    return s.packets >= max(min_packets, 1e-12)


def network_factor(s: Samples, eps: float, min_packets: float = 1.0) -> np.ndarray:
    """NF per VM (Eq. 2-4)."""
    has = traffic_samples(s, min_packets)
    traffic_num = has.sum(axis=0)
    freq = traffic_num / s.num
    lo, hi = s.packets.min(axis=0), s.packets.max(axis=0)
    span = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        norm = np.where(span > 0, (s.packets - lo) / span, 1.0)
    avg = np.where(traffic_num > 0, (norm * has).sum(axis=0) / np.maximum(traffic_num, 1), 0.0)
    return eps * freq + (1 - eps) * avg


def io_degree(s: Samples) -> np.ndarray:
    """io_degree per VM (SR-IOV paper Eq. 1-3), over the whole window."""
    cpu_usage = s.gotten.sum(axis=0) / (s.seconds.sum() * s.vcpus)
    return 100.0 * (1.0 - cpu_usage)


def net_degree(s: Samples, eps: float, min_packets: float = 1.0) -> np.ndarray:
    """net_degree per VM (SR-IOV paper Eq. 4-6), data in KiB per sample."""
    freq = traffic_samples(s, min_packets).sum(axis=0) / s.num
    data_avg = (s.data / 1024.0).sum(axis=0) / s.num
    return eps * data_avg + (1 - eps) * freq
