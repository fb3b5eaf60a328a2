"""What the simulator's parts share: its error, a flow's ends, a migration's record."""

from __future__ import annotations

from dataclasses import dataclass


class SimError(Exception):
    """An operation the simulated data center refuses (as a real one would), with the reason."""


@dataclass
class Flow:
    src: tuple[int, int]
    dst: tuple[int, int]
    kind: str
    alive: bool = True


@dataclass
class MigrationRecord:
    vm: str
    src: str
    dst: str
    started: float
    finished: float
    bytes: float
    downtime: float
    rounds: int
    status: str  # completed | not-converged | timed-out | cancelled | unfinished
    moved: bool = False  # the VM runs on dst afterwards (a not-converged migration moves it too)
    throttle: float = 0.0  # the highest auto-converge throttle the guest got
    mode: str = "precopy"  # precopy | postcopy
