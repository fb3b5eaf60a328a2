"""Live migration as QEMU does it: pre-copy against the closed form, and what happens when it cannot converge
(caps, auto-converge, post-copy, timeouts), all at sub-step precision."""

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sova.sim.migration import Migration, MigrationConfig, closed_form

GIB = 2**30


def run(memory, dirty, bandwidth, dt=1.0, wss=0.0, limit=100_000, **options):
    m = Migration(0, 0, 1, memory, dirty, wss, 0.0, MigrationConfig(**options))
    steps = 0
    while not m.done and steps < limit:
        m.advance(bandwidth, dt)
        steps += 1
    return m


@given(
    st.floats(64 * 2**20, 16 * GIB),
    st.floats(0, 0.95),
    st.floats(50e6, 5e9),
    st.sampled_from([0.0, 0.25, 0.5, 1.0]),
    st.sampled_from([0.1, 1.0, 5.0]),
    st.sampled_from([0.03, 0.3]),
)
def test_time_stepped_precopy_matches_the_closed_form(memory, lam, bandwidth, wss_share, dt, downtime_limit):
    dirty = lam * bandwidth
    m = run(memory, dirty, bandwidth, dt, wss=wss_share * memory, downtime_limit=downtime_limit)
    ref = closed_form(memory, dirty, bandwidth, bandwidth * downtime_limit, 0, 0.02, wss_share * memory)
    assert m.status == "completed" and m.mode == "precopy"
    assert m.round == ref.rounds
    assert m.sent == pytest.approx(ref.data, rel=1e-9)
    assert m.downtime == pytest.approx(ref.downtime, rel=1e-9)
    assert m.elapsed == pytest.approx(ref.total_time, rel=1e-6, abs=1e-9)


def test_durations_are_kept_below_the_step():
    m = run(GIB, 0.0, 1e8, dt=5.0)  # 10.74 s of copying plus the resume, in 5 s steps
    assert m.elapsed == pytest.approx(GIB / 1e8 + 0.02)
    assert m.elapsed % 5.0 != pytest.approx(0.0)


def test_a_guest_dirtying_faster_than_the_link_never_converges_without_a_cap():
    m = run(2 * GIB, 2e8, 1.25e8, limit=3600)
    assert not m.done and m.phase == "precopy" and m.round > 100
    assert closed_form(2 * GIB, 2e8, 1.25e8, 1.25e8 * 0.3).rounds == math.inf


def test_a_round_cap_forces_the_stop_and_copy_and_says_it_did_not_converge():
    m = run(2 * GIB, 2e8, 1.25e8, max_rounds=29)
    assert m.status == "not-converged" and m.round == 29 and m.on_destination
    assert m.downtime == pytest.approx(2 * GIB / 1.25e8 + 0.02)  # the whole memory is dirty: ~17 s paused


def test_xens_volume_cap_stops_after_three_times_memory():
    m = run(GIB, 0.95e9, 1e9, max_factor=3.0)
    assert m.status == "not-converged"
    assert 3 * GIB < m.sent <= 4 * GIB  # the stop-and-copy carries it past 3 M


def test_writable_working_set_caps_each_round():
    uncapped = run(4 * GIB, 0.5e9, 1e9)
    capped = run(4 * GIB, 0.5e9, 1e9, wss=256 * 2**20)
    assert uncapped.sent > 4 * GIB + 2e9  # round 1 alone re-sends ~2.1 GB
    assert 4 * GIB + 256 * 2**20 <= capped.sent < 4 * GIB + 2 * 256 * 2**20


def test_auto_converge_throttles_the_guest_until_it_converges():
    m = run(2 * GIB, 2e8, 1.25e8, auto_converge=True)
    assert m.status == "completed"
    # dirtying 1.6x the link: converging needs the dirty rate below the link, a throttle above 37.5 %
    assert 0.4 <= m.throttle <= 0.99
    assert m.downtime <= 0.3 + 0.02 + 1e-9


def test_the_throttle_rises_in_qemus_steps_and_stops_at_99_percent():
    m = Migration(0, 0, 1, 2 * GIB, 1e10, 0.0, 0.0, MigrationConfig(auto_converge=True))
    seen = [0.0]
    for _ in range(100_000):
        m.advance(1.25e8, 1.0)
        if m.throttle != seen[-1]:
            seen.append(m.throttle)
        if m.done:
            break
    assert seen[1:4] == pytest.approx([0.2, 0.3, 0.4]) and seen[-1] == pytest.approx(0.99)
    assert all(b - a == pytest.approx(0.1) for a, b in itertools.pairwise(seen[1:-1]))


def test_postcopy_switches_after_the_first_pass_and_the_guest_runs_on_the_destination():
    m = Migration(0, 0, 1, 2 * GIB, 2e8, 0.0, 0.0, MigrationConfig(postcopy=True))
    while m.phase == "precopy":
        m.advance(1.25e8, 1.0)
    while m.phase == "switch":
        m.advance(1.25e8, 0.01)
    assert m.on_destination and not m.done and m.mode == "postcopy"
    while not m.done:
        m.advance(1.25e8, 1.0)
    assert m.status == "completed" and m.downtime == pytest.approx(0.02)
    assert m.sent == pytest.approx(2 * GIB + 2 * GIB)  # one pass, then every page (all were dirtied) pulled


@pytest.mark.parametrize(
    ("action", "status", "moved"),
    [("abort", "timed-out", False), ("suspend", "not-converged", True), ("postcopy", "completed", True)],
)
def test_a_timeout_ends_a_migration_that_does_not_converge_as_libvirt_would(action, status, moved):
    m = run(2 * GIB, 2e8, 1.25e8, timeout=62.5, timeout_action=action)
    assert m.status == status and m.on_destination == moved
    if action == "abort":
        assert m.elapsed == pytest.approx(62.5)  # not rounded to the 1 s step
    if action == "suspend":
        assert m.downtime > 10.0  # the rest of the dirty memory, copied while paused


def test_no_bandwidth_no_progress():
    m = Migration(0, 0, 1, GIB, 1e6, 0.0, 0.0)
    sent, paused = m.advance(0.0, 10.0)
    assert sent == 0 and paused == 0 and not m.done


def test_the_fidelity_benchmark_prints_every_case_as_json_beside_the_closed_form():
    import json
    import subprocess
    import sys

    from helpers import ROOT

    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "migration_fidelity.py"), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    cases = json.loads(done.stdout)
    assert len(cases) == 8 * 2 * 2
    keys = {"wss", "intensity", "downtime_limit_s", "time_s", "bytes", "rounds", "downtime_s", "status"}
    assert all(keys <= case.keys() for case in cases)
    assert {c["intensity"] for c in cases} == {0.0, 0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95}
    for case in cases:  # one idle link: the simulator is the closed form
        assert case["status"] == "completed"
        assert case["time_s"] == pytest.approx(case["closed_form"]["time_s"], rel=1e-6)
        assert case["rounds"] == case["closed_form"]["rounds"]


def test_a_timeout_lands_on_time_even_when_the_link_carries_nothing_or_it_falls_on_a_step_boundary():
    stalled = Migration(0, 0, 1, GIB, 1e6, 0.0, 0.0, MigrationConfig(timeout=5.0))
    stalled.advance(0.0, 10.0)
    assert stalled.status == "timed-out" and stalled.elapsed == pytest.approx(5.0)
    on_boundary = Migration(0, 0, 1, 2 * GIB, 2e8, 0.0, 0.0, MigrationConfig(timeout=5.0))
    for _ in range(5):
        on_boundary.advance(1.25e8, 1.0)
    assert on_boundary.done and on_boundary.status == "timed-out"  # in the 5th step, not the 6th


def test_a_stop_and_copy_stalled_by_the_network_counts_the_stall_as_downtime():
    m = Migration(0, 0, 1, GIB, 1e6, 0.0, 0.0)  # ~10.7 MB left for the stop-and-copy: 0.107 s at 1e8 B/s
    paused = 0.0
    while m.phase == "precopy":
        paused += m.advance(1e8, 0.001)[1]
    paused += m.advance(0.0, 1.0)[1]  # the link carries nothing for a second while the guest is paused
    while not m.done:
        paused += m.advance(1e8, 0.01)[1]
    assert m.downtime == pytest.approx(paused, abs=1e-9) and m.downtime == pytest.approx(1.0 + 0.107 + 0.02, abs=0.01)
