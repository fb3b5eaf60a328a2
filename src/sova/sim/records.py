"""What the simulator's parts share: its error, a flow's ends, the records of migrations and VM lifecycles."""

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
    status: str  # completed | not-converged | timed-out | cancelled | unfinished | failed (a fault)
    moved: bool = False  # the VM runs on dst afterwards (a not-converged migration moves it too)
    throttle: float = 0.0  # the highest auto-converge throttle the guest got
    mode: str = "precopy"  # precopy | postcopy


@dataclass(frozen=True)
class LifecycleRecord:
    """A VM's arrival, creation, refusal, deletion or withdrawal (deleted before it was placed)."""

    time: float
    vm: str
    event: str  # arrived | created | refused | deleted | withdrawn
    host: str  # where it was created, refused or deleted ('' while it has none)
    message: str = ""
