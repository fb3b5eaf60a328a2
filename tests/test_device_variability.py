"""A storage device's variation: its speed over time (log-normal AR(1)), the completions of the streams it
paces, writes slower than reads, and the M/G/1 wait of its service-time variation."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import make_scenario, serve_io
from sova.sim.device_variability import CapacityProcess, completions
from sova.sim.engine import Simulator


def test_the_speed_factor_has_mean_one_the_stated_variation_and_correlation_time():
    process = CapacityProcess(np.array([0.2, 0.0]), np.array([1.0, 1.0]), np.random.default_rng(7))
    factors = np.array([process.advance(0.025) for _ in range(40_000 * 4)])  # 4,000 s of 25 ms epochs
    steady, varying = factors[:, 1], factors[:, 0]
    assert (steady == 1.0).all()
    assert varying.mean() == pytest.approx(1.0, abs=0.02)
    assert varying.std() / varying.mean() == pytest.approx(0.2, rel=0.1)
    logs = np.log(varying)
    lag = 40  # 1 s, the correlation time: the correlation of log f falls to 1/e
    corr = np.corrcoef(logs[:-lag], logs[lag:])[0, 1]
    assert corr == pytest.approx(np.exp(-1), abs=0.05)


def test_completions_keep_their_mean_and_vary_as_a_renewal_count():
    rng = np.random.default_rng(3)
    rate = np.full(20_000, 400.0)  # 10 requests in a 25 ms epoch
    drawn = completions(rate, 0.025, np.full(20_000, 1.0), rng)
    assert drawn.mean() == pytest.approx(400.0, rel=0.01)
    assert drawn.std() / 400.0 == pytest.approx(1 / np.sqrt(10), rel=0.05)  # cv / sqrt(n)
    assert (drawn >= 0).all()
    fixed = np.full(3, 400.0)
    assert completions(fixed, 0.025, np.zeros(3), rng) is fixed  # no variation: the mean itself


def busy_device(variability: float, **fio):
    return make_scenario(
        scenario={"duration": 120, "seed": 5},
        storage=[{"name": "disk", "device": "disk-array", "variability": variability}],
        vms=[{"name": "db", "host": "h1"}],
        workloads=[{"kind": "fio", "vm": "db", "size": "4KiB", "iops": 1e6, "iodepth": 32, **fio}],
    )


def per_second_iops(scenario, seconds: int = 120) -> np.ndarray:
    sim = Simulator(scenario)
    out, last = [], 0.0
    for _ in range(seconds):
        sim.step()
        ops = float(sim.sensors.counters["blk_rd_ops"][0] + sim.sensors.counters["blk_wr_ops"][0])
        out.append(ops - last)
        last = ops
    return np.array(out)


def test_a_stream_the_device_paces_follows_the_devices_speed_and_the_same_seed_gives_the_same_run():
    steady = per_second_iops(busy_device(0.0))
    varying = per_second_iops(busy_device(0.3))
    assert steady.std() / steady.mean() == pytest.approx(1 / np.sqrt(1000), rel=0.25)  # ~1,000 a second
    assert 0.15 < varying.std() / varying.mean() < 0.45
    assert varying.mean() == pytest.approx(steady.mean(), rel=0.1)
    assert np.array_equal(per_second_iops(busy_device(0.3)), varying)


def test_a_stream_paced_by_its_own_rate_completes_at_that_rate_whatever_the_device_does():
    paced = per_second_iops(busy_device(0.3, iops=200), seconds=30)
    assert paced == pytest.approx(np.full(30, 200.0))


def test_a_device_paced_closed_stream_reports_latency_by_littles_law_every_epoch():
    sim = Simulator(busy_device(0.3))
    for _ in range(5):
        sim.step()
        io = sim.sensors.gauges["io"]
        assert io["served"][0] * io["latency"][0] == pytest.approx(32.0, rel=1e-9)


def test_writes_take_the_devices_write_time():
    def latency(read: float) -> float:
        scenario = make_scenario(
            storage=[{"name": "ssd", "write_access_time": "400us"}],
            vms=[{"name": "db", "host": "h1"}],
            workloads=[{"kind": "fio", "vm": "db", "size": "4KiB", "iops": 100, "read": read}],
        )
        sim = Simulator(scenario)
        sim.step()
        return float(sim.sensors.gauges["io"]["latency"][0])

    transfer = 4096 * 8 / 4e9
    assert latency(1.0) == pytest.approx(100e-6 + transfer, rel=1e-3)
    assert latency(0.0) == pytest.approx(400e-6 + transfer, rel=1e-3)


def test_the_wait_at_a_busy_device_grows_with_the_service_times_variation():
    service = np.array([1e-3])
    wait = {
        cv: serve_io(np.array([0]), np.array([800.0]), service, np.array([1.0]), cv)[1][0] - 1e-3 for cv in (0, 1, 2)
    }
    assert wait[1] == pytest.approx(1e-3 * 0.8 / 0.2)  # M/M/1: ρ / (1 - ρ) services
    assert wait[0] == pytest.approx(wait[1] / 2) and wait[2] == pytest.approx(wait[1] * 5 / 2)  # (1 + cv²) / 2
