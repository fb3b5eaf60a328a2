"""The storage subsystem on its own clock: 25 ms epochs inside 1 s fabric steps, per-VM queues and limits.

These check the epoch model's mean values exactly, so the scenarios serve each epoch's mean (io_noise off);
tests/test_device_variability.py checks the completions drawn around it."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import make_scenario
from sova.control.runtime import Runtime
from sova.drivers.sim import SimDriver
from sova.model.actions import OK, SetIoLimit, SetIoSize
from sova.model.io_sample import IoThrottle
from sova.model.scenario import ControlSpec
from sova.model.schema import Field, InputError
from sova.plan.base import Policy, register
from sova.sim.engine import Simulator
from sova.sim.storage_epochs import OPEN_QUEUE


def fio_scenario(storage_step: float = 0.0, limiter: str = "time-stamp", **fio):
    """A fio VM beside a busy one; `limiter`: the VM's rate limiter (time-stamp: exactly its limit in every
    epoch, which these tests of the epoch model count on; qemu: QEMU's throttle, with its bursts)."""
    return make_scenario(
        scenario={"duration": 10},
        storage=[{"name": "ssd"}],
        vms=[{"name": "db", "host": "h1"}, {"name": "web", "host": "h1"}],
        workloads=[{"kind": "fio", "vm": "db", "size": "4KiB", **fio}, {"kind": "lookbusy", "vm": "web", "util": 0.5}],
        simulator={"io_noise": False, "io_limiter": limiter} | ({"storage_step": storage_step} if storage_step else {}),
    )


def run(sim: Simulator, seconds: float) -> None:
    for _ in range(round(seconds / sim.dt)):
        sim.step()


def io_ops(sim: Simulator) -> np.ndarray:
    return sim.sensors.counters["blk_rd_ops"] + sim.sensors.counters["blk_wr_ops"]


def test_epochs_of_25_ms_serve_an_open_loop_stream_as_one_second_steps_do():
    coarse, fine = Simulator(fio_scenario(iops=5000)), Simulator(fio_scenario(0.025, iops=5000))
    run(coarse, 10)
    run(fine, 10)
    assert fine.dt == 0.025 and fine.fabric_dt == 1.0 and fine.t == pytest.approx(10.0)
    assert io_ops(fine)[0] == pytest.approx(io_ops(coarse)[0], rel=1e-9) == pytest.approx(50_000)
    assert fine.sensors.counters["blk_time"][0] == pytest.approx(coarse.sensors.counters["blk_time"][0], rel=1e-9)
    # the fabric's counters grow in even parts over its ticks and reach the same totals
    assert fine.sensors.counters["cpu_time"] == pytest.approx(coarse.sensors.counters["cpu_time"], rel=1e-9)
    assert fine.sensors.energy_j == pytest.approx(coarse.sensors.energy_j, rel=1e-9)


def test_halfway_through_a_fabric_step_the_counters_hold_half_of_it():
    sim = Simulator(fio_scenario(0.025, iops=4000))
    run(sim, 1.5)
    assert sim.sensors.counters["cpu_time"][1] == pytest.approx(0.75, rel=0.02)  # 0.5 core for 1.5 s
    assert io_ops(sim)[0] == pytest.approx(6000, rel=1e-9)


def test_a_closed_loop_stream_keeps_its_depth_outstanding_and_its_latency_follows_littles_law():
    sim = Simulator(fio_scenario(0.025, iops=1e6, iodepth=32))  # far above what the SSD serves
    run(sim, 5)
    ops = io_ops(sim)[0]
    served_iops = ops / 5
    mean_latency = sim.sensors.counters["blk_time"][0] / ops
    assert served_iops < 1e6 / 5  # the device, not the offered rate, sets the pace
    assert mean_latency == pytest.approx(32 / served_iops, rel=0.1)  # N = X R with N = iodepth
    assert sim.storage.epochs.queue.max() <= 32


@pytest.mark.parametrize("limiter, burst", [("time-stamp", 0), ("qemu", 101)])
def test_an_io_limit_set_between_fabric_steps_acts_from_the_next_epoch(limiter, burst):
    sim = Simulator(fio_scenario(0.025, limiter, iops=4000))
    driver = SimDriver(sim)
    run(sim, 0.5)
    assert driver.apply(SetIoLimit(vm="db", iops=1000)).status == OK
    before = io_ops(sim)[0]
    run(sim, 0.5)
    assert before == pytest.approx(2000, rel=1e-9)
    # 1,000 IOPS for the second half, and with QEMU's throttle its empty bucket's L/10 + 1 at once
    assert io_ops(sim)[0] - before == pytest.approx(500 + burst, rel=1e-9)


@register
class EpochRecorder(Policy):
    """A test policy that notes when it runs."""

    name = "test-epoch-recorder"
    loop = "local"
    schema = {"period": Field("duration", 0.05, "")}
    times: list[float] = []

    def plan(self, knowledge, findings):
        EpochRecorder.times.append(knowledge.latest.time)
        return []


def test_a_local_loop_runs_every_50_ms_between_one_second_fabric_steps():
    EpochRecorder.times.clear()
    sim = Simulator(fio_scenario(0.025, iops=100))
    runtime = Runtime(SimDriver(sim), [EpochRecorder(period=0.05)], ControlSpec(monitor_period=0.025))
    runtime.tick()
    for _ in range(40):
        sim.step()
        runtime.tick()
    assert EpochRecorder.times == pytest.approx([0.05 * k for k in range(1, 21)])


@pytest.mark.parametrize("storage_step", [0.03, 2.0])
def test_a_storage_step_that_does_not_tile_the_step_is_refused(storage_step):
    with pytest.raises(InputError) as err:
        fio_scenario(storage_step, iops=10)
    assert "[simulator].storage_step" in str(err.value) and "whole epochs" in str(err.value)


def test_a_limit_below_a_closed_loop_streams_rate_holds_its_depth_in_the_vms_queue():
    sim = Simulator(fio_scenario(0.025, iops=5000, iodepth=16))
    SimDriver(sim).apply(SetIoLimit(vm="db", iops=2000))
    run(sim, 2)
    ops = io_ops(sim)[0]
    assert ops == pytest.approx(4000, rel=1e-9)
    assert sim.sensors.counters["blk_time"][0] / ops == pytest.approx(16 / 2000, rel=1e-9)  # 8 ms: depth / limit
    assert 15 < sim.storage.epochs.queue[0] < 16  # all but the ~0.2 IOs at the device wait behind the limiter


def test_a_closed_loop_stream_on_a_busy_device_gets_no_more_than_its_depth_over_the_devices_latency():
    scenario = make_scenario(
        scenario={"duration": 10},
        storage=[{"name": "ssd"}],
        vms=[{"name": "db", "host": "h1"}, {"name": "noisy", "host": "h1"}],
        workloads=[
            {"kind": "fio", "vm": "db", "size": "4KiB", "iops": 1e6, "iodepth": 1},
            {"kind": "fio", "vm": "noisy", "size": "4KiB", "iops": 68_000},
        ],
        simulator={"io_noise": False},
    )
    sim = Simulator(scenario)
    run(sim, 2)
    served, latency = sim.sensors.gauges["io"]["served"], sim.sensors.gauges["io"]["latency"]
    assert served[0] * latency[0] == pytest.approx(1.0, rel=1e-9)  # one IO outstanding, always
    unloaded = 100e-6 + 4096 * 8 / 4e9  # the SSD's access time and transfer of 4 KiB
    assert latency[0] > 1.5 * unloaded  # it waits behind the noisy stream's IOs at the busy device


@pytest.mark.parametrize(
    ("device", "random_access", "sequential_access"), [("ssd", 100e-6, 20e-6), ("disk-array", 8e-3, 0.1e-3)]
)
def test_a_sequential_stream_skips_the_seek_a_random_one_pays(device, random_access, sequential_access):
    def latency(pattern: str) -> float:
        scenario = make_scenario(
            storage=[{"name": "st", "device": device}],
            vms=[{"name": "db", "host": "h1"}],
            workloads=[{"kind": "fio", "vm": "db", "size": "64KiB", "iops": 1e6, "iodepth": 1, "pattern": pattern}],
            simulator={"io_noise": False},
        )
        sim = Simulator(scenario)
        run(sim, 2)
        return float(sim.sensors.gauges["io"]["latency"][0])

    transfer = latency("random") - random_access
    assert latency("sequential") == pytest.approx(sequential_access + transfer, rel=1e-9)


def test_a_merge_limit_splits_each_io_into_the_fewest_equal_requests_within_it():
    scenario = make_scenario(
        scenario={"duration": 10},
        storage=[{"name": "ssd"}],
        vms=[{"name": "db", "host": "h1"}],
        workloads=[{"kind": "fio", "vm": "db", "size": "16KiB", "iops": 100, "read": 1.0}],
        simulator={"io_noise": False},
    )
    sim = Simulator(scenario)
    SimDriver(sim).apply(SetIoSize("db", 12 * 1024))  # 16 KiB -> 2 requests of 8 KiB
    run(sim, 2)
    assert sim.sensors.counters["blk_rd_ops"][0] == pytest.approx(400)  # 2 s x 100 IOs x 2 requests
    assert sim.sensors.counters["blk_rd_bytes"][0] == pytest.approx(2 * 100 * 16 * 1024)  # the same bytes
    assert sim.storage.served("fio")[0] == pytest.approx(100)  # the workload sees its own IOs
    SimDriver(sim).apply(SetIoSize("db", 0))
    run(sim, 1)
    assert sim.sensors.counters["blk_rd_ops"][0] == pytest.approx(500)


def test_a_closed_stream_split_by_a_merge_limit_keeps_every_piece_outstanding():
    def depth_seen(merge: float) -> float:
        sim = Simulator(fio_scenario(iops=1e6, iodepth=4, size="64KiB"))
        sim.storage.controls.size_limit[0] = merge
        run(sim, 1)
        io = sim.sensors.gauges["io"]
        return float(io["served"][0] * io["latency"][0])  # Little's law: requests outstanding

    assert depth_seen(0) == pytest.approx(4.0) and depth_seen(16 * 1024) == pytest.approx(16.0)


def test_an_in_flight_cap_makes_an_open_stream_wait_in_the_guest_and_its_latency_follow_littles_law():
    sim = Simulator(fio_scenario(0.025, iops=5000))  # open loop
    driver = SimDriver(sim)
    driver.set_io_throttle(IoThrottle(("db",), np.array([2000.0]), np.zeros(1), in_flight=np.array([4.0])))
    run(sim, 1.0)
    before_ops, before_time = io_ops(sim)[0], sim.sensors.counters["blk_time"][0]
    run(sim, 1.0)
    ops = io_ops(sim)[0] - before_ops
    assert ops == pytest.approx(2000, rel=1e-6)  # the limiter still paces it
    latency = (sim.sensors.counters["blk_time"][0] - before_time) / ops
    assert latency == pytest.approx(4 / 2000, rel=1e-6)  # 4 in flight at 2,000 IOPS: 2 ms each


@pytest.mark.parametrize(("pattern", "merged"), [("sequential", 4), ("random", 1)])
def test_under_a_merge_limit_a_sequential_streams_queued_ios_are_merged_and_a_random_ones_are_not(pattern, merged):
    sim = Simulator(fio_scenario(0.025, iops=2000, iodepth=8, pattern=pattern))
    driver = SimDriver(sim)
    run(sim, 1.0)
    assert io_ops(sim)[0] == pytest.approx(2000, rel=1e-6)  # no limit: every 4 KiB IO is a request
    driver.set_io_throttle(IoThrottle(("db",), np.zeros(1), np.array([16384.0])))
    before_ops, before_bytes = (
        io_ops(sim)[0],
        sim.sensors.counters["blk_rd_bytes"][0] + sim.sensors.counters["blk_wr_bytes"][0],
    )
    run(sim, 1.0)
    moved = sim.sensors.counters["blk_rd_bytes"][0] + sim.sensors.counters["blk_wr_bytes"][0] - before_bytes
    assert moved == pytest.approx(2000 * 4096, rel=1e-6)  # the same data
    assert io_ops(sim)[0] - before_ops == pytest.approx(2000 / merged, rel=1e-6)  # in 16 KiB requests
    assert sim.storage.served("fio")[0] == pytest.approx(2000, rel=1e-6)  # the workload's own IOs all served


def test_an_open_stream_held_back_by_its_limit_queues_what_it_was_not_served_and_serves_it_later():
    sim = Simulator(fio_scenario(0.025, iops=4000))  # open loop, 100 IOs an epoch
    driver = SimDriver(sim)
    driver.apply(SetIoLimit(vm="db", iops=2000))
    run(sim, 0.1)
    assert sim.storage.epochs.queue[0] == pytest.approx(200)  # 4 epochs of 50 IOs not served
    queued_latency = sim.sensors.gauges["io"]["latency"][0]
    driver.apply(SetIoLimit(vm="db", iops=0))
    run(sim, 0.025)
    assert sim.sensors.gauges["io"]["served"][0] == pytest.approx(4000 + 200 / 0.025)  # the queue drains at once
    run(sim, 0.875)
    assert sim.storage.epochs.queue[0] == 0
    assert io_ops(sim)[0] == pytest.approx(4000, rel=1e-9)  # a second's IOs, every one served
    assert queued_latency > 150 / 2000  # it waited behind 100-200 queued IOs at 2,000 IOPS
    assert sim.sensors.gauges["io"]["latency"][0] < 1e-3  # the queue gone, the device's own latency


def test_an_open_stream_above_its_limit_keeps_at_most_the_guests_queue_and_waits_behind_it():
    sim = Simulator(fio_scenario(0.025, iops=5000))
    SimDriver(sim).apply(SetIoLimit(vm="db", iops=1000))
    run(sim, 2)
    assert sim.storage.epochs.queue[0] == OPEN_QUEUE
    assert sim.sensors.gauges["io"]["served"][0] == pytest.approx(1000)  # what is beyond the queue is not issued
    device_latency = 100e-6 + 4096 * 8 / 4e9
    assert sim.sensors.gauges["io"]["latency"][0] == pytest.approx(OPEN_QUEUE / 1000 + device_latency, rel=1e-6)


def small_stream_beside(neighbour_size: str, neighbour_iops: float, iodepth: int) -> tuple[float, float]:
    """Throughput and latency of a VM's 4 KiB reads on a disk array beside a VM of open-loop reads of
    `neighbour_size` at `neighbour_iops`."""
    small = {"kind": "fio", "vm": "db", "size": "4KiB", "read": 1.0}
    small |= {"iops": 1e6, "iodepth": iodepth} if iodepth else {"iops": 300}
    scenario = make_scenario(
        storage=[{"name": "array", "device": "disk-array", "parallelism": 4, "bandwidth": "1Gbps"}],
        vms=[{"name": "db", "host": "h1"}, {"name": "big", "host": "h1"}],
        workloads=[small, {"kind": "fio", "vm": "big", "size": neighbour_size, "iops": neighbour_iops, "read": 1.0}],
        simulator={"io_noise": False},
    )
    sim = Simulator(scenario)
    run(sim, 2)
    return float(sim.sensors.gauges["io"]["served"][0]), float(sim.sensors.gauges["io"]["latency"][0])


@pytest.mark.parametrize("iodepth", [0, 2])
def test_a_neighbours_large_requests_hold_up_a_vms_small_ones_more_than_small_requests_at_the_same_load(iodepth):
    # the array: 4 units, 8 ms to reach a request, 1 Gb/s to transfer it, service times exponential (cv 1)
    def service(size: int) -> float:
        return 8e-3 + size * 8 / 1e9

    def expected_latency(size: int, neighbour_rate: float, own_rate: float) -> float:
        """Pollaczek-Khinchine by hand for the device as one server four times faster (E[S²] = 2 s²); a
        closed stream (own_rate 0) waits only behind its neighbour."""
        rates, shares = np.array([own_rate, neighbour_rate]), np.array([service(4096), service(size)]) / 4
        rho = (rates * shares).sum()
        return service(4096) + rho / (1 - rho) * (rates * shares**2).sum() / (rates * shares).sum()

    load = 0.3 * 4  # the neighbour keeps the array 30 % busy either way
    latencies = {}
    for size, label in ((4 * 2**20, "4MiB"), (4096, "4KiB")):
        served, latency = small_stream_beside(label, load / service(size), iodepth)
        own = 0.0 if iodepth else 300.0
        assert latency == pytest.approx(expected_latency(size, load / service(size), own), rel=1e-6)
        if iodepth:  # a closed stream's throughput is its depth over its latency
            assert served * latency == pytest.approx(iodepth)
        latencies[label] = latency
    assert latencies["4MiB"] > 1.35 * latencies["4KiB"]
