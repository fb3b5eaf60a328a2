"""The storage SLO baselines as IO controllers: mClock's and DRR's tags, the leaky bucket's credit, and all
of them in one run against SEE where the reservations exceed what the device gives."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import make_scenario
from sova.experiments.scenario_runs import run_profile
from sova.model.io_sample import IoSample
from sova.model.storage_slo import SloBook
from sova.plan.storage.drr import DeficitRoundRobin
from sova.plan.storage.leaky_bucket import LeakyBucket
from sova.plan.storage.mclock import MClock


def bound(controller, ranges: dict[str, tuple[float, float]]):
    book = SloBook(ranges)
    for vm, (low, high) in ranges.items():
        book.set_throughput(vm, low, high)
    controller.bind(book, {vm: "array" for vm in ranges})
    return controller


def sample(time: float, requests) -> IoSample:
    requests = np.asarray(requests, dtype=float)
    return IoSample(time, requests, requests * 4096, np.zeros(len(requests)))


def test_mclock_reserves_each_target_weighs_by_it_and_limits_at_the_upper_bound():
    mclock = bound(MClock(period=1.0, limit=1.0), {"a": (400, 500), "b": (600, 600)})
    throttle = mclock.control(sample(0.0, [0, 0]))
    assert list(throttle.reservation) == [400, 600] and list(throttle.weight) == [400, 600]
    assert list(throttle.iops) == [500, 600] and not throttle.weight_on_bytes
    unlimited = bound(MClock(period=1.0, limit=0.0), {"a": (400, 500)}).control(sample(0.0, [0]))
    assert list(unlimited.iops) == [0]


def test_drr_gives_quanta_in_bytes_of_a_page_per_iops_of_target():
    drr = bound(DeficitRoundRobin(period=1.0, limit=1.0, page=4096.0), {"a": (400, 400), "b": (600, 900)})
    throttle = drr.control(sample(0.0, [0, 0]))
    assert throttle.weight_on_bytes and list(throttle.weight) == [400 * 4096, 600 * 4096]
    assert throttle.reservation is None and list(throttle.iops) == [400, 900]


def test_a_leaky_bucket_saves_the_credit_a_held_back_vm_missed_up_to_its_burst_and_spends_it():
    bucket = bound(LeakyBucket(period=0.025, burst=0.5), {"a": (400, 400)})
    assert bucket.control(sample(0.0, [0])).iops[0] == 400  # no credit yet: the target's rate
    # held back to 200 IOPS for 0.1 s: 20 requests of credit saved, spent over the next epoch
    assert bucket.control(sample(0.1, [20])).iops[0] == pytest.approx(400 + 20 / 0.025)
    # starved for 2 s: the credit stops at half a second of the target (200 requests)
    assert bucket.control(sample(2.1, [20])).iops[0] == pytest.approx(400 + 200 / 0.025)
    # given its target, the credit holds; given more, it is spent
    assert bucket.control(sample(2.2, [60])).iops[0] == pytest.approx(400 + 200 / 0.025)
    assert bucket.control(sample(2.225, [60 + 10 + 150])).iops[0] == pytest.approx(400 + 50 / 0.025)


def test_without_a_burst_the_leaky_bucket_is_a_fixed_rate():
    bucket = bound(LeakyBucket(period=0.025, burst=0.0), {"a": (400, 400)})
    bucket.control(sample(0.0, [0]))
    assert bucket.control(sample(1.0, [10])).iops[0] == 400


def overcommitted(profile: str):
    """Three VMs of the same requests reserve 1.5 times what their array serves."""
    return make_scenario(
        scenario={"duration": 20},
        simulator={"storage_step": 0.025, "io_noise": False, "io_limiter": "time-stamp"},
        storage=[{"name": "array", "device": "disk-array", "parallelism": 4, "access_time": "5ms"}],
        vms=[{"name": vm, "host": "h1", "storage": "array"} for vm in ("a", "b", "c")],
        workloads=[{"kind": "fio", "vm": vm, "size": "4KiB", "iops": 5000} for vm in ("a", "b", "c")],
        slos=[{"vm": vm, "throughput": [t, t]} for vm, t in (("a", 200), ("b", 400), ("c", 600))],
        profiles={profile: {"policies": [profile]}},
    )


def test_with_reservations_beyond_the_device_mclock_cuts_every_vm_alike_and_see_cuts_the_larger_targets():
    # 800 IOPS of array for 1,200 reserved
    mclock = run_profile(overcommitted("mclock"), "mclock").summary["slo"]
    fraction = [mclock[vm]["throughput_mean"] / mclock[vm]["target_mean"] for vm in "abc"]
    assert fraction == pytest.approx([2 / 3] * 3, rel=0.01)
    see = run_profile(overcommitted("see"), "see").summary["slo"]
    # each PI loop raises its limit; the device shares its time max-min: the smallest target is met, the
    # other two split what is left evenly, whatever their targets
    assert see["a"]["throughput_mean"] == pytest.approx(200, rel=0.01) and see["a"]["sc_rate"] == 100
    assert see["b"]["throughput_mean"] == pytest.approx(see["c"]["throughput_mean"], rel=0.01)
    assert see["b"]["throughput_mean"] == pytest.approx(300, rel=0.01)
