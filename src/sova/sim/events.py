"""What finishes during a step, as typed events: a batch run, a MapReduce job, a file transfer.

The simulator adds them as they happen (with their time inside the step); whoever measures them (the
recorder, Virtue's trials) takes the kinds it wants, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar


@dataclass(frozen=True)
class BatchDone:
    vm: int  # the VM that ran it
    seconds: float  # from the run's start to its end


@dataclass(frozen=True)
class JobDone:
    job: int  # MapReduce job
    started: float
    finished: float
    map_seconds: float = 0.0  # from the start to the end of its map phase
    reduce_seconds: float = 0.0  # from the end of its shuffle to its end

    @property
    def seconds(self) -> float:
        return self.finished - self.started


@dataclass(frozen=True)
class TransferDone:
    workload: int  # row of the transfer workload entry
    seconds: float  # from its start to its last byte


Event = BatchDone | JobDone | TransferDone
E = TypeVar("E", BatchDone, JobDone, TransferDone)


class EventLog:
    """Events not yet taken, in the order they happened."""

    def __init__(self) -> None:
        self._waiting: list[Event] = []

    def add(self, event: Event) -> None:
        self._waiting.append(event)

    def take(self, kind: type[E]) -> list[E]:
        """The waiting events of one kind, removed from the log; the others stay for their consumers."""
        taken = [e for e in self._waiting if isinstance(e, kind)]
        if taken:
            self._waiting = [e for e in self._waiting if not isinstance(e, kind)]
        return taken
