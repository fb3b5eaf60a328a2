"""sysbench cpu --cpu-max-prime=N: jobs of ``threads`` threads, each job as long as ``seconds`` alone;
reports each job's completion time (as batch jobs).

The load a prime job puts on each of its vCPUs is what CloudScope measured with xentop (its §II-B):
prime 2000, 3000 and 5000 keep a vCPU 20 %, 50 % and 90 % busy. A vCPU runs at the VM's MIPS where the
VM states them (the paper's 1 GHz vCPUs on 2.9 GHz threads use 0.34 of a thread at 100 %).
"""

from __future__ import annotations

import numpy as np

from sova.sim.workload_kinds.base import register_kind
from sova.sim.workload_kinds.batch import Batch

PRIME_LOAD = {2000: 0.2, 3000: 0.5, 5000: 0.9}  # CloudScope §II-B: a vCPU's utilisation per prime job


@register_kind
class Sysbench(Batch):
    name = "sysbench"
    order = 50

    def prepare(self, group, specs, step) -> None:
        group.params["think"] = np.zeros(len(group))
        group.params["work"] = np.zeros(len(group))  # set at register, once the VMs' speed is known
        super().prepare(group, specs, step)

    def register(self, group, sim) -> None:
        group.params["work"] = group.params["seconds"] * self._cores(group, sim)
        group.state["left"] = group.params["work"].copy()

    def _cores(self, group, sim) -> np.ndarray:
        load = np.array([PRIME_LOAD[int(n)] for n in group.params["prime"]])
        threads = np.minimum(group.params["threads"], sim.compute.vm_vcpus[group.vm])
        per_vcpu = sim.compute.vcpu_cores(group.vm, sim.vms.host) / sim.compute.vm_vcpus[group.vm]
        return threads * load * per_vcpu
