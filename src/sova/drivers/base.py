"""The driver interface. Nothing above a driver knows which data center it talks to."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sova.model.actions import Action, Outcome
from sova.model.io_sample import IoSample, IoThrottle
from sova.model.snapshot import Snapshot, VmRequest


class Driver(Protocol):
    """A data center as Sova sees it."""

    def now(self) -> float:
        """Seconds on the driver's clock (simulated or wall)."""
        ...

    def observe(self) -> Snapshot:
        """Read every sensor once."""
        ...

    def requests(self) -> list[VmRequest]:
        """VMs asked for and not yet placed, oldest first (the admission policy places them)."""
        ...

    def apply(self, action: Action) -> Outcome:
        """Start an action. Long ones (migrations, hot-plug) return status 'running'."""
        ...

    def poll(self, action: Action) -> Outcome:
        """The current outcome of an action that was 'running'."""
        ...

    def cancel(self, action: Action) -> Outcome:
        """Abort a running action, leaving the VM where and as it was."""
        ...

    def io_sample(self, vms: Sequence[str]) -> IoSample:
        """The named VMs' cumulative block counters, for a fast IO control loop."""
        ...

    def set_io_throttle(self, throttle: IoThrottle) -> None:
        """Set each named VM's IO throttle at once (a controller's output; not an audited action)."""
        ...
