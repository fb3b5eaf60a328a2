"""A VM started on a host: one that asked to run (admission), or one of a failed host booted elsewhere from
its disks on shared storage (HA restart)."""

from __future__ import annotations

from dataclasses import dataclass

from sova.model.actions.base import Action


@dataclass(frozen=True)
class CreateVM(Action, kind="create-vm"):
    """Start a requested VM on a host (admission)."""

    vm: str
    host: str

    @property
    def placed_on(self) -> str:
        return self.host


@dataclass(frozen=True)
class RestartVM(Action, kind="restart-vm"):
    """Boot a VM of a failed host on another host, from its disks on shared storage (HA restart)."""

    vm: str
    host: str
    vm_host_acts = False  # its VM's host is the failed one: only where it boots counts

    @property
    def placed_on(self) -> str:
        return self.host
