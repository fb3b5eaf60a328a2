"""Filebench's personalities (the SASLO paper's Table 3) as block IO: closed loops of whole-file requests."""

from __future__ import annotations

import pytest

from helpers import make_scenario
from sova.model.schema import InputError
from sova.sim.engine import Simulator


def served(personality: str, **params) -> tuple[float, float, float, float]:
    """(requests/s, mean request size in bytes, read share, mean latency in s) over 10 s on one SSD."""
    scenario = make_scenario(
        scenario={"duration": 10},
        storage=[{"name": "ssd"}],
        vms=[{"name": "vm", "host": "h1"}],
        workloads=[{"kind": "filebench", "vm": "vm", "personality": personality, **params}],
        simulator={"io_noise": False},
    )
    sim = Simulator(scenario)
    for _ in range(10):
        sim.step()
    c = sim.sensors.counters
    ops = c["blk_rd_ops"][0] + c["blk_wr_ops"][0]
    size = (c["blk_rd_bytes"][0] + c["blk_wr_bytes"][0]) / ops
    return ops / sim.t, size, c["blk_rd_ops"][0] / ops, c["blk_time"][0] / ops


@pytest.mark.parametrize(
    ("personality", "size", "read"),
    [("webserver", 16 * 1024, 10 / 11), ("fileserver", 128 * 1024, 1 / 3), ("varmail", 16 * 1024, 1 / 2)],
)
def test_each_personality_reads_and_writes_whole_files_in_its_mix(personality, size, read):
    _, mean_size, read_share, _ = served(personality)
    assert mean_size == pytest.approx(size) and read_share == pytest.approx(read)


def test_more_threads_on_a_saturated_device_wait_longer_for_the_same_throughput():
    few, _, _, wait_few = served("varmail")  # 16 threads already keep the SSD's 8 units busy
    many, _, _, wait_many = served("varmail", threads=64)
    assert many == pytest.approx(few) and wait_many == pytest.approx(4 * wait_few)  # Little's law


def test_an_unknown_personality_is_refused_with_the_choices():
    with pytest.raises(InputError, match="webserver"):
        served("oltp")
