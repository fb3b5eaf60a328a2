"""The map from the cluster's clock (the hosts' reports' times) to the wall clock that the API shows, and
the rule for showing the cluster's own time beside it."""

from __future__ import annotations

import pytest

from sova.service.cluster_clock import APART, ClusterClock, apart

START = 1.8e9  # a wall-clock Unix time (2027)
SPEED = 20.0


def simulated(reports: int, period: float = 5.0) -> ClusterClock:
    """The pairs a cluster at --speed 20 gives: it starts at the wall clock times 20 and reports every
    `period` simulated seconds."""
    clock = ClusterClock()
    for k in range(reports):
        clock.note(START * SPEED + k * period, START + k * period / SPEED)
    return clock


def test_a_simulated_clusters_times_map_to_the_wall_clock_they_were_reported_at():
    clock = simulated(10)
    assert clock.rate() == pytest.approx(SPEED)
    assert clock.to_wall(START * SPEED + 10.0) == pytest.approx(START + 0.5)  # a report's own time
    assert clock.to_wall(START * SPEED + 12.5) == pytest.approx(START + 0.625)  # between two reports
    assert clock.to_wall(START * SPEED + 65.0) == pytest.approx(START + 3.25)  # past the newest, at its rate
    assert clock.to_wall(START * SPEED - 20.0) == pytest.approx(START - 1.0)  # before the oldest


def test_a_clock_with_no_report_yet_takes_the_clusters_times_for_the_wall_clocks():
    clock = ClusterClock()
    assert clock.to_wall(START) == START and clock.rate() == 1.0


def test_a_report_older_or_less_than_a_second_newer_than_the_newest_kept_changes_nothing():
    clock = simulated(3)  # the newest at START * SPEED + 10
    clock.note(START * SPEED + 4.0, START + 100.0)  # a late one
    clock.note(START * SPEED + 10.5, START + 100.0)  # another host's report of the same moment, nearly
    assert list(clock.cluster) == [START * SPEED, START * SPEED + 5.0, START * SPEED + 10.0]
    assert clock.to_wall(START * SPEED + 10.0) == pytest.approx(START + 0.5)


def test_the_clusters_own_time_is_shown_only_where_it_runs_apart_from_the_wall_clock():
    assert apart(START * SPEED, START) == START * SPEED  # a simulated cluster at --speed 20
    assert apart(START - 5.0, START) is None  # a real host's report, 5 s old
    assert apart(START - APART, START) is None and apart(START - APART - 1, START) == START - APART - 1
    assert apart(None, START) is None and apart(START, None) is None  # a plan not decided yet
