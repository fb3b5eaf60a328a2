"""The cluster's clock against the wall clock, for what the API shows people.

The control loop runs on the cluster's clock: the time of the hosts' reports. Real hosts stamp their
reports with the wall clock; a simulated cluster at ``--speed N`` stamps them with the simulator's clock,
which starts at the wall clock times N and runs N times as fast (``SimCluster``). The loop keeps that
clock for its windows and hold-downs; the API shows people wall-clock Unix times, and the cluster's own
time beside them only where the two run apart (``apart``).

``ClusterClock`` keeps pairs (the report's time, the wall-clock time it was sent at) as reports come, and
maps a cluster time to the wall clock by interpolating between them (beyond them, at the rate the pairs
show): what the manager holds only on the cluster's clock (its findings, its Knowledge) is shown so.
"""

from __future__ import annotations

from collections import deque

import numpy as np

APART = 60.0  # s: further apart than this, the cluster's clock is shown beside the wall clock. Real hosts'
# times trail the wall clock by the age of the freshest report (a monitor period, seconds); a simulated
# cluster's run apart from its first report on (N - 1 times the wall clock at --speed N)
KEEP = 10_000  # pairs: at one a second at most (GAP), hours of reports, beyond the Knowledge's history
GAP = 1.0  # s of the cluster's clock between two pairs kept


def apart(cluster_time: float | None, wall_time: float | None) -> float | None:
    """`cluster_time` where it runs apart from `wall_time` (more than APART seconds), else None."""
    if cluster_time is None or wall_time is None or abs(cluster_time - wall_time) <= APART:
        return None
    return cluster_time


class ClusterClock:
    """Pairs of (cluster time, wall time) from the reports, newest last, and the map between the two."""

    def __init__(self, keep: int = KEEP):
        self.cluster: deque[float] = deque(maxlen=keep)
        self.wall: deque[float] = deque(maxlen=keep)

    def note(self, cluster_time: float, wall_time: float) -> None:
        """A report of `cluster_time` sent at `wall_time`; one older than the newest kept changes nothing."""
        if self.cluster and cluster_time < self.cluster[-1] + GAP:
            return
        self.cluster.append(cluster_time)
        self.wall.append(wall_time)

    def to_wall(self, cluster_time: float) -> float:
        """The wall-clock time at which the cluster's clock read `cluster_time` (itself before any report)."""
        if not self.cluster:
            return cluster_time
        cluster = np.fromiter(self.cluster, float, len(self.cluster))
        wall = np.fromiter(self.wall, float, len(self.wall))
        if cluster[0] <= cluster_time <= cluster[-1]:
            return float(np.interp(cluster_time, cluster, wall))
        end = 0 if cluster_time < cluster[0] else -1
        return float(wall[end] + (cluster_time - cluster[end]) / self.rate())

    def rate(self) -> float:
        """Cluster seconds per wall second over the pairs kept (1 until two pairs say otherwise)."""
        if len(self.cluster) < 2 or self.wall[-1] <= self.wall[0]:
            return 1.0
        return (self.cluster[-1] - self.cluster[0]) / (self.wall[-1] - self.wall[0])
