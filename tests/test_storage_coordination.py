"""SASLO's optimizer: Algorithm 1 and 2's branches (down, up, hold, warning) and the IO split controller."""

import numpy as np
import pytest

from sova.plan.storage import io_split
from sova.plan.storage.coordination import coordinate, throughput_step

# Table 4 (configuration 1): throughput ranges, SC-rate and PF-ratio ranges of three VMs
LOW, HIGH = np.array([400.0, 600.0, 800.0]), np.array([600.0, 800.0, 1000.0])
SC = (np.array([80.0, 85.0, 80.0]), np.array([90.0, 90.0, 90.0]))
PF = (np.array([8.0, 5.0, 5.0]), np.array([15.0, 10.0, 10.0]))
STEP = throughput_step(LOW, HIGH)


def round_(setting, sc, pf):
    return coordinate(np.array(setting, dtype=float), LOW, HIGH, STEP, np.array(sc), SC, np.array(pf), PF)


def test_the_step_is_ten_percent_of_each_range():
    assert STEP.tolist() == [20.0, 20.0, 20.0]


def test_every_vm_steps_up_when_all_exceed_their_qos():
    out = round_([400, 600, 800], sc=[95, 95, 95], pf=[4, 3, 3])
    assert out.setting.tolist() == [420, 620, 820] and not out.warning


def test_a_vm_at_its_upper_bound_stays_while_the_others_step_up():
    out = round_([600, 700, 900], sc=[95, 95, 95], pf=[4, 3, 3])
    assert out.setting.tolist() == [600, 720, 920] and out.moved.tolist() == [0, 1, 1]


def test_one_vm_missing_its_pf_bound_steps_every_vm_down_that_can():
    # the paper's Fig. 9 at 90 x 30 s: VM1's PF ratio 16.8 % > 15 % lowers all three targets
    out = round_([500, 600, 900], sc=[95, 95, 95], pf=[16.8, 3, 3])
    assert out.setting.tolist() == [480, 600, 880] and not out.warning


def test_within_qos_but_not_above_it_nothing_moves():
    out = round_([500, 700, 900], sc=[85, 95, 95], pf=[4, 3, 3])
    assert out.moved.tolist() == [0, 0, 0] and not out.warning


def test_a_miss_that_no_vm_can_step_down_for_is_a_warning():
    out = round_([400, 610, 800], sc=[70, 95, 95], pf=[4, 3, 3])
    assert out.setting.tolist() == [400, 610, 800] and out.warning


def test_an_unmeasured_vm_holds_the_others_back_from_stepping_up():
    out = round_([400, 600, 800], sc=[95, np.nan, 95], pf=[4, np.nan, 3])
    assert out.moved.tolist() == [0, 0, 0] and not out.warning


def test_algorithm_2_steps_io_size_limits_by_4_kb():
    kb = 1024.0
    out = coordinate(
        np.array([12 * kb, 12 * kb, 12 * kb]),
        np.full(3, 12 * kb),
        np.array([32 * kb, 44 * kb, 24 * kb]),
        np.full(3, 4 * kb),
        np.array([95.0, 95.0, 95.0]),
        SC,
        np.array([4.0, 3.0, 3.0]),
        PF,
    )
    assert (out.setting / kb).tolist() == [16, 16, 16]


def split_state():
    return io_split.SplitState.fresh(np.array([32768.0, 32768.0]))


def test_a_latency_surge_shrinks_the_merge_limit_by_one_plus_the_target_over_throughput():
    state = split_state()
    kw = {"integral": np.zeros(2), "lowest": np.array([4096.0, 16384.0]), "highest": np.full(2, 32768.0)}
    io_split.step(state, np.array([10.0, 10.0]), np.array([100.0, 100.0]), np.array([100.0, 100.0]), **kw)
    # latency +50 % (> 30 %). VM 0: α = 100 / 100 = 1, so 32 KB / 2 = 16 KB.
    new = io_split.step(state, np.array([15.0, 15.0]), np.array([100.0, 50.0]), np.array([100.0, 100.0]), **kw)
    assert new[0] == pytest.approx(16384.0)
    assert new[1] == pytest.approx(32768.0)  # α = 2 would give 10.9 KB, below its 16 KB lower bound: no split


def test_the_merge_limit_rolls_back_once_latency_is_in_range_and_the_integral_is_zero():
    state = split_state()
    kw = {"lowest": np.full(2, 4096.0), "highest": np.full(2, 32768.0)}
    target = np.full(2, 100.0)
    io_split.step(state, np.full(2, 10.0), target, target, integral=np.zeros(2), **kw)
    io_split.step(state, np.full(2, 20.0), target, target, integral=np.zeros(2), **kw)  # split to 16 KB
    back = io_split.step(state, np.full(2, 20.0), target, target, integral=np.array([0.0, 30.0]), **kw)
    assert back.tolist() == [32768.0, 16384.0]  # VM 1's PI controller is still integrating: it waits
