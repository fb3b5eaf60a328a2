"""A split IO's pieces follow its first on the disk, and a striped array's random IO busies each disk it
spans (sim/storage.py, piece_access)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import make_scenario
from sova.sim.engine import Simulator
from sova.sim.storage import piece_access

KIB = 1024.0


def one(value: float) -> np.ndarray:
    return np.array([value])


def test_only_the_first_piece_of_a_split_io_seeks():
    waited, busy = piece_access(one(5.7e-3), one(0.1e-3), one(128 * KIB), one(32), one(0), one(16))
    assert waited[0] == busy[0] == pytest.approx((5.7e-3 + 31 * 0.1e-3) / 32)


def test_an_unsplit_io_seeks_once_on_an_unstriped_device():
    waited, busy = piece_access(one(5.7e-3), one(0.1e-3), one(128 * KIB), one(1), one(0), one(16))
    assert waited[0] == busy[0] == pytest.approx(5.7e-3)


@pytest.mark.parametrize("stripe, spans", [(128 * KIB, 1 + 124 / 128), (512 * KIB, 1 + 124 / 512), (4 * KIB, 16)])
def test_a_random_io_on_a_striped_array_busies_every_disk_it_spans_and_waits_for_one_seek(stripe, spans):
    waited, busy = piece_access(one(5.7e-3), one(0.1e-3), one(128 * KIB), one(1), one(stripe), one(16))
    assert waited[0] == pytest.approx(5.7e-3)
    assert busy[0] == pytest.approx(spans * 5.7e-3)  # at most every disk of the array


def array_use(stripe: str, size: str, merge: float = 0.0) -> float:
    """The array's utilisation under a VM's open-loop 100 random reads a second of `size`."""
    scenario = make_scenario(
        storage=[
            {"name": "array", "device": "disk-array", "parallelism": 16, "access_time": "5.7ms", "stripe": stripe}
        ],
        vms=[{"name": "db", "host": "h1", "storage": "array"}],
        workloads=[{"kind": "fio", "vm": "db", "size": size, "iops": 100, "read": 1.0}],
        simulator={"io_noise": False},
    )
    sim = Simulator(scenario)
    sim.storage.controls.size_limit[0] = merge
    sim.step()
    sim.step()  # the limit set after the first step's offer
    return float(sim.sensors.gauges["storage_util"][0])


def test_striping_raises_the_arrays_use_by_the_disks_a_request_spans():
    plain, striped = array_use("0", "128KiB"), array_use("128KiB", "128KiB")
    assert striped / plain == pytest.approx(1 + 124 / 128, rel=0.02)  # transfer time is 1 % of the access


def test_a_split_io_costs_the_array_one_seek_and_its_other_pieces_sequential_accesses():
    split = array_use("0", "128KiB", merge=4 * KIB)  # 32 pieces of 4 KiB
    assert split == pytest.approx(100 * (5.7e-3 + 31 * 0.1e-3) / 16, rel=0.02)
