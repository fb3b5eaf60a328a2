"""Per-VM means of named groups of VMs (``[outputs] groups``): what a paper reports per VM type (CloudScope's
std-cpu, std-disk, std-net), from the VMs' counters, their batch jobs and their HTTP servers."""

from __future__ import annotations

import fnmatch

import numpy as np


def vm_groups(sim, rec, services: list[dict], groups: dict[str, str]) -> dict[str, dict]:
    """{label: per-VM means over the run} for each group of VMs (a name or glob)."""
    seconds = max(sim.t, 1e-9)
    c = sim.sensors.counters
    jobs_by_vm: dict[int, list[float]] = {}
    for done in rec.batch:
        jobs_by_vm.setdefault(done.vm, []).append(done.seconds)
    out = {}
    for label, pattern in groups.items():
        vms = [i for i, name in enumerate(sim.vm_names) if fnmatch.fnmatchcase(name, pattern)]
        names = {sim.vm_names[i] for i in vms}
        jobs = [t for i in vms for t in jobs_by_vm.get(i, [])]
        servers = [x for x in services if x["server"] in names and x["response_mean"] is not None]
        served = sum(x["served"] for x in servers)
        out[label] = {
            "vms": len(vms),
            "cpu_cores_mean": float(c["cpu_time"][vms].sum() / seconds / len(vms)),
            "io_bytes_per_s": float((c["blk_rd_bytes"][vms] + c["blk_wr_bytes"][vms]).sum() / seconds / len(vms)),
            "iops": float((c["blk_rd_ops"][vms] + c["blk_wr_ops"][vms]).sum() / seconds / len(vms)),
            "net_rx_gbps": float(c["guest_rx_bytes"][vms].sum() * 8 / seconds / 1e9 / len(vms)),
            "net_tx_gbps": float(c["guest_tx_bytes"][vms].sum() * 8 / seconds / 1e9 / len(vms)),
            "batch_jobs": len(jobs),
            "batch_completion_mean": float(np.mean(jobs)) if jobs else None,
            "response_mean": (
                float(sum(x["response_mean"] * x["served"] for x in servers) / served) if served > 0 else None
            ),
        }
    return out
