"""The hypervisor's own work in the simulator (CloudScope §II-B): blkback's Dom0 CPU per request, the
shared grant table, hyper-threads sharing cores, and sysbench prime jobs."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import make_scenario
from sova.model.schema import InputError
from sova.sim.blkback import BlkbackParams, dom0_share, grant_wait
from sova.sim.engine import Simulator
from sova.sim.events import BatchDone

BB = BlkbackParams(cost_per_request=50e-6, cost_per_byte=0.0, grant_entries=128, grant_page=4096, grant_stall=2e-3)


def test_requests_wait_one_refill_per_full_table_they_want():
    host = np.array([0, 0, 1])
    size = np.array([256 * 1024, 256 * 1024, 128 * 1024])  # two 64-entry requests fill host 0's 128 entries
    wait = grant_wait(host, np.ones(3), size, 2, BB)
    assert wait.tolist() == [2e-3, 2e-3, 0.0]
    assert grant_wait(host, np.array([4.0, 4.0, 1.0]), size, 2, BB)[0] == pytest.approx(
        4 * 2e-3
    )  # 512 entries: 4 tables


def test_dom0_processes_the_share_of_requests_its_free_cpu_allows():
    host = np.array([0, 0, 1])
    share = dom0_share(host, np.array([30_000.0, 10_000.0, 1_000.0]), np.full(3, 50e-6), np.array([1.0, 1.0]))
    assert share.tolist() == pytest.approx([0.5, 0.5, 1.0])  # 2 cores wanted on host 0, 1 free


def disk_scenario(n_vms: int, block: int, hypervisor: str = "xen"):
    return make_scenario(
        scenario={"duration": 10},
        hosts=[{"name": "h1", "cores": 32, "hypervisor": hypervisor, "dom0_vcpus": 4}],
        storage=[{"name": "disk", "parallelism": 2, "access_time": 20e-6, "bandwidth": "2Gbps"}],
        vms=[{"name": "vm{i}", "count": n_vms, "host": "h1", "vcpus": 4}],
        workloads=[{"kind": "fio", "vm": "vm*", "iops": 1e7, "size": block, "read": 1.0, "iodepth": 1}],
    )


def read_rate(scenario) -> tuple[float, float]:
    """(bytes/s read, Dom0 utilisation) after a few steps."""
    sim = Simulator(scenario)
    for _ in range(5):
        sim.step()
    return sim.sensors.counters["blk_rd_bytes"].sum() / sim.t, sim.sensors.counters["dom0_cpu_time"].sum() / sim.t / 4


def test_small_blocks_keep_dom0_busy_and_large_ones_leave_it_mostly_idle():
    _, small = read_rate(disk_scenario(10, 1024))
    _, large = read_rate(disk_scenario(10, 1024 * 1024))
    assert small > 0.8 and large < 0.2


@pytest.mark.parametrize("n_vms", [2, 5, 10])
def test_throughput_drops_once_the_guests_requests_fill_the_grant_table(n_vms):
    """Paper: "the throughput drops for 2, 5, and 10 DomUs" from 256 KB (from 32 KB, below every count's fill)."""
    mid, _ = read_rate(disk_scenario(n_vms, 32 * 1024))
    large, _ = read_rate(disk_scenario(n_vms, 256 * 1024))
    assert large < 0.7 * mid


def test_kvm_hosts_have_no_grant_table_and_no_blkback_cost():
    xen, _ = read_rate(disk_scenario(5, 256 * 1024))
    kvm, _ = read_rate(disk_scenario(5, 256 * 1024, "kvm"))
    assert kvm > 1.5 * xen
    sim = Simulator(disk_scenario(5, 256 * 1024, "kvm"))
    sim.step()
    assert not sim.storage.blkback_cpu.any()


def prime_job_time(n_vms: int, threads_per_core: int) -> float:
    scenario = make_scenario(
        scenario={"duration": 60},
        hosts=[{"name": "h1", "cores": 32, "threads_per_core": threads_per_core, "ghz": 2.9}],
        vms=[{"name": "vm{i}", "count": n_vms, "host": "h1", "vcpus": 4, "mips": 1000}],
        workloads=[{"kind": "sysbench", "vm": "vm*", "prime": 3000, "seconds": 10}],
    )
    sim = Simulator(scenario)
    for _ in range(60):
        sim.step()
    return float(np.mean([e.seconds for e in sim.events.take(BatchDone)]))


def test_a_prime_job_takes_its_stated_time_on_an_idle_host():
    assert prime_job_time(1, 2) == pytest.approx(10.0, rel=1e-6)


def test_busy_hyper_thread_siblings_slow_jobs_that_whole_cores_would_not():
    # 30 VMs x 4 vCPUs x 50 % x 1/2.9 = 20.7 busy threads: more than 16 cores, fewer than 32 threads
    assert prime_job_time(30, 2) > 1.1 * prime_job_time(30, 1)


def test_cores_must_be_a_multiple_of_threads_per_core():
    with pytest.raises(InputError) as err:
        make_scenario(hosts=[{"name": "h1", "cores": 15, "threads_per_core": 2}])
    assert "cores" in str(err.value) and "multiple of threads_per_core" in str(err.value)


def receive_rate(n_vms: int, hypervisor: str) -> tuple[float, float]:
    """(bits/s each VM receives over its vNIC, Dom0 cores) with n senders elsewhere flooding n VMs."""
    scenario = make_scenario(
        scenario={"duration": 10},
        hosts=[
            {"name": "h1", "cores": 32, "hypervisor": hypervisor, "dom0_vcpus": 8},
            {"name": "h2", "cores": 64, "dom0_vcpus": 16, "nic": {"bandwidth": "100Gbps"}},
        ],
        vms=[{"name": "srv{i}", "count": n_vms, "host": "h1"}, {"name": "cli{i}", "count": n_vms, "host": "h2"}],
        workloads=[{"kind": "netperf", "vm": "srv*", "peer": "cli{i}", "direction": "rx"}],
    )
    sim = Simulator(scenario)
    for _ in range(5):
        sim.step()
    rx = sim.sensors.counters["vnic_rx_bytes"][:n_vms] * 8 / sim.t
    return float(rx.mean()), float(sim.sensors.counters["dom0_cpu_time"][0] / sim.t)


def test_one_netback_thread_bounds_a_xen_vif_to_what_one_dom0_vcpu_forwards():
    sim = Simulator(make_scenario(hosts=[{"name": "h1"}], vms=[{"name": "v", "host": "h1"}]))
    one_core = 1.0 / sim.network.dom0_cost_bit  # bits/s one Dom0 vCPU forwards at the default costs
    rx, dom0 = receive_rate(1, "xen")
    assert rx == pytest.approx(one_core, rel=0.01) and dom0 == pytest.approx(1.0, rel=0.01)
    rx_two, dom0_two = receive_rate(2, "xen")  # two vifs, two threads: the port bounds them
    assert rx_two < rx and 2 * rx_two > 1.8 * rx and dom0_two > 1.8 * dom0


def test_a_kvm_vnic_is_not_bounded_by_one_dom0_vcpu():
    rx, dom0 = receive_rate(1, "kvm")
    assert rx > 9e9 and dom0 > 1.5
