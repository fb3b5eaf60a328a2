"""Pre-copy migration against the closed form of models-and-formulas.md."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sova.sim.migration import Migration, closed_form


def run(memory, dirty, bandwidth, dt=1.0, **kw):
    m = Migration(vm=0, src=0, dst=1, memory=memory, dirty_rate=dirty, wss=kw.pop("wss", 0.0), started=0.0, **kw)
    steps = 0
    while not m.done:
        m.advance(bandwidth, dt)
        steps += 1
        assert steps < 100_000
    return m


@given(
    st.floats(64 * 2**20, 16 * 2**30),
    st.floats(0, 0.9),
    st.floats(50e6, 5e9),
    st.sampled_from([0.1, 1.0, 5.0]),
)
def test_time_stepped_migration_matches_the_closed_form(memory, lam, bandwidth, dt):
    dirty = lam * bandwidth
    m = run(memory, dirty, bandwidth, dt, max_factor=1e9)
    ref = closed_form(memory, dirty, bandwidth, bandwidth * 0.3, 30, 0.02)
    assert m.round == ref.rounds
    assert m.sent == pytest.approx(ref.data, rel=1e-9)
    assert m.downtime == pytest.approx(ref.downtime, rel=1e-9)
    assert m.elapsed == pytest.approx(ref.total_time, rel=1e-6, abs=1e-9)


def test_a_guest_dirtying_faster_than_the_link_stops_at_the_round_cap():
    m = run(2**30, 2e9, 1e9, max_rounds=5, max_factor=1e9)
    assert m.round == 5


def test_xen_rule_stops_after_three_times_memory():
    m = run(2**30, 0.95e9, 1e9, max_factor=3.0)
    assert m.sent <= 4 * 2**30  # the last round may carry it a bit past 3 M
    assert m.round < 30


def test_writable_working_set_caps_each_round():
    uncapped = run(4 * 2**30, 0.5e9, 1e9, max_factor=1e9)
    capped = run(4 * 2**30, 0.5e9, 1e9, wss=256 * 2**20, max_factor=1e9)
    assert uncapped.sent > 4 * 2**30 + 2e9  # round 1 alone re-sends ~2.1 GB
    assert 4 * 2**30 + 256 * 2**20 <= capped.sent < 4 * 2**30 + 2 * 256 * 2**20


def test_no_bandwidth_no_progress():
    m = Migration(0, 0, 1, 2**30, 1e6, 0.0, 0.0)
    sent, paused = m.advance(0.0, 10.0)
    assert sent == 0 and paused == 0 and not m.done
