"""The papers' measured set-ups, rebuilt as scenarios, that the simulator's defaults are calibrated on.

Each function runs the set-up on the simulator with default parameters and returns the measured
numbers. The tests hold them to the papers' shapes with stated tolerances, and
``benchmarks/calibration.py`` prints them for docs/simulator.md.

1. SR-IOV paper §5.4 / Fig. 7c: N VMs each streaming netperf through one 10 GbE port to a remote
   host; vNIC vs VF aggregate throughput (paper: 9018 vs 9429 Mb/s at 63 VMs).
2. Sova paper Fig. 2 (+ footnote 2): a client VM sends 2,500 requests/s to a server VM for pages of
   a given size; co-located vs on two hosts, vNIC vs VF.
3. CloudScope Fig. 2a: VMs of 4 vCPUs (1 GHz each) running sysbench prime N with 4 threads on the
   paper's host (Table I: two 8-core 2.9 GHz CPUs, 32 hyper-threads); mean job completion time
   normalised to one VM (paper: about 1.7x at 45 VMs for prime 3000). Prime 3000 keeps each vCPU 50 %
   busy: 4 x 1 GHz x 50 % per VM, so 46 VMs fill the host (the paper's own arithmetic).
4. The lab's scheduling wait (benchmarks/sched_wait_lab.py): an idle 1-vCPU guest answering small
   requests on a 2-core host while 0-5 other 1-vCPU guests keep their vCPUs busy; the mean response
   time's rise over the idle host's (lab: benchmarks/data/sched-wait-lab.csv).
"""

from __future__ import annotations

from sova.experiments.scenario_runs import run_scenario
from sova.model.scenario_reader import scenario_from_dict
from sova.sim.engine import Simulator


def netperf_throughput(n_vms: int, nic: str, seconds: int = 5) -> float:
    """Aggregate goodput (bit/s) of n_vms netperf streams leaving one host through one 10 GbE port."""
    raw = {
        "scenario": {"name": "sriov-5.4", "duration": seconds, "seed": 1},
        "hosts": [{"name": "server", "cores": 32, "memory": "64GiB"}],
        "vms": [{"name": "vm{i}", "count": n_vms, "host": "server", "nic": nic, "memory": 512}],
        "workloads": [{"vm": "vm*", "kind": "netperf", "peer": "external"}],
    }
    sim = Simulator(scenario_from_dict(raw))
    for _ in range(seconds):
        sim.step()
    return float(sim.sensors.counters["guest_tx_bytes"].sum() * 8 / seconds)


def web_response_time(page: str, colocated: bool, nic: str, rate: float = 2500, seconds: int = 60) -> float:
    """Mean response time (s) of a client VM's requests to a server VM."""
    raw = {
        "scenario": {"name": "sova-fig2", "duration": seconds, "seed": 1},
        "hosts": [{"name": "hm{i}", "count": 2, "cores": 16}],
        "vms": [
            {"name": "server", "host": "hm1", "nic": nic, "vcpus": 2},
            {"name": "client", "host": "hm1" if colocated else "hm2", "nic": nic, "vcpus": 2},
        ],
        "workloads": [{"vm": "server", "kind": "httperf", "client": "client", "rate": rate, "page": page}],
    }
    (result,) = run_scenario(scenario_from_dict(raw))
    return float(result.summary["services"]["response_mean"])


def cpu_job_time(n_vms: int, prime: int = 3000, seconds: int = 300, simulator: dict | None = None) -> float:
    """Mean completion time (s) of 10-second sysbench prime jobs in each of n_vms VMs on the paper's host."""
    raw = {
        "scenario": {"name": "cloudscope-2a", "duration": seconds, "seed": 1},
        "simulator": simulator or {},
        "hosts": [
            {"name": "pm", "cores": 32, "threads_per_core": 2, "ghz": 2.9, "memory": "256GiB", "hypervisor": "xen"}
        ],
        "vms": [{"name": "vm{i}", "count": n_vms, "host": "pm", "vcpus": 4, "mips": 1000, "memory": "2GiB"}],
        "workloads": [{"vm": "vm*", "kind": "sysbench", "prime": prime, "threads": 4, "seconds": 10}],
    }
    (result,) = run_scenario(scenario_from_dict(raw))
    return float(result.summary["batch"]["completion_mean"])


def wake_wait_response(busy_guests: int, seconds: int = 30) -> float:
    """Mean response time (s) of an idle 1-vCPU guest answering 50 small requests a second from another
    host while `busy_guests` 1-vCPU guests beside it keep their vCPUs busy on a 2-core host (the lab's set-up)."""
    vms = [{"name": "echo", "host": "lab", "vcpus": 1}, {"name": "client", "host": "far", "vcpus": 1}]
    workloads = [{"vm": "echo", "kind": "httperf", "client": "client", "rate": 50, "page": "1KB"}]
    if busy_guests:
        vms.append({"name": "busy{i}", "count": busy_guests, "host": "lab", "vcpus": 1})
        workloads.append({"vm": "busy*", "kind": "lookbusy", "util": 1.0})
    raw = {
        "scenario": {"name": "sched-wait-lab", "duration": seconds, "seed": 1},
        "hosts": [{"name": "lab", "cores": 2, "memory": "64GiB"}, {"name": "far", "cores": 2, "memory": "64GiB"}],
        "vms": vms,
        "workloads": workloads,
    }
    (result,) = run_scenario(scenario_from_dict(raw))
    return float(result.summary["services"]["response_mean"])
