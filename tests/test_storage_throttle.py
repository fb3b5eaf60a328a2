"""A VM's IO rate limiter as QEMU's throttle behaves (measured: benchmarks/qemu_throttle.py) and as SASLO's
time-stamp limiter does, epoch by epoch (sim/io_throttle.py) and in the simulator."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import make_scenario
from sova.drivers.sim import SimDriver
from sova.model.actions import SetIoLimit
from sova.sim.engine import Simulator
from sova.sim.io_throttle import RateLimiters

EPOCH = 0.025


def passed_per_epoch(limiter: RateLimiters, limits: list[float], offered: float) -> list[float]:
    """Requests a VM offering `offered` requests/s passes in each epoch, its limit each epoch's."""
    out = []
    for limit in limits:
        allowance = limiter.allowance(np.array([limit]), EPOCH)[0]
        passed = min(offered, allowance)
        limiter.account(np.array([limit]), np.array([passed]), EPOCH)
        out.append(passed * EPOCH)
    return out


def test_qemus_throttle_lets_a_tenth_of_a_second_through_at_once_then_exactly_its_limit():
    counts = passed_per_epoch(RateLimiters(1, "qemu"), [400.0] * 80, 1e6)
    assert counts[0] == pytest.approx(400 * EPOCH + 41)  # measured: a burst of 40 at 400, 80 at 800
    assert counts[1:] == pytest.approx([400 * EPOCH] * 79)  # measured: 400.0 per 1 s epoch, std 0
    assert sum(counts[:40]) == pytest.approx(441)  # the first second: measured 440


@pytest.mark.parametrize("pause, burst", [(0.025, 10), (0.05, 20), (0.2, 41)])
def test_after_a_pause_qemus_throttle_lets_through_what_its_bucket_saved(pause, burst):
    limiter = RateLimiters(1, "qemu")
    passed_per_epoch(limiter, [400.0] * 40, 1e6)
    passed_per_epoch(limiter, [400.0] * round(pause / EPOCH), 0.0)
    # measured at 400: 8, 19-21 and 40 after 20, 50 and 200 ms (min(L pause, L/10 + 1))
    assert passed_per_epoch(limiter, [400.0], 1e6)[0] == pytest.approx(400 * EPOCH + burst)


def test_each_new_limit_refills_qemus_bucket_so_a_limit_moved_every_epoch_lets_through_far_more():
    limits = [400.0 + (k % 2) for k in range(40)]  # a controller that moves the limit every epoch
    got = sum(passed_per_epoch(RateLimiters(1, "qemu"), limits, 1e6))
    assert got == pytest.approx(400.5 + 40 * 41, rel=1e-3)  # measured, rewritten every 25 ms: 1,966-1,969 / s


def test_the_time_stamp_limiter_saves_nothing_and_a_new_limit_adds_nothing():
    limiter = RateLimiters(1, "time-stamp")
    assert passed_per_epoch(limiter, [400.0 + (k % 2) for k in range(40)], 1e6) == pytest.approx(
        [(400.0 + (k % 2)) * EPOCH for k in range(40)]
    )
    passed_per_epoch(limiter, [400.0] * 8, 0.0)
    assert passed_per_epoch(limiter, [400.0], 1e6)[0] == pytest.approx(10)


def test_an_unknown_limiter_is_refused():
    with pytest.raises(ValueError, match="io_limiter"):
        RateLimiters(1, "token")


@pytest.mark.parametrize("limiter, first_second", [("qemu", 1101), ("time-stamp", 1000)])
def test_a_closed_loop_vm_behind_its_limit_gets_the_limiters_first_burst_then_its_limit(limiter, first_second):
    scenario = make_scenario(
        scenario={"duration": 10},
        storage=[{"name": "ssd"}],
        vms=[{"name": "db", "host": "h1", "storage": "ssd"}],
        workloads=[{"kind": "fio", "vm": "db", "size": "4KiB", "iops": 5000, "iodepth": 16}],
        simulator={"io_noise": False, "storage_step": EPOCH, "io_limiter": limiter},
    )
    sim = Simulator(scenario)
    SimDriver(sim).apply(SetIoLimit(vm="db", iops=1000))
    ops = []
    for _ in range(2):
        for _ in range(round(1 / EPOCH)):
            sim.step()
        ops.append(sim.sensors.counters["blk_rd_ops"][0] + sim.sensors.counters["blk_wr_ops"][0])
    assert ops[0] == pytest.approx(first_second, rel=1e-9)
    assert ops[1] - ops[0] == pytest.approx(1000, rel=1e-9)
