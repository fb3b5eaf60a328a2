"""A host's own settings: the CPU weight of its control domain (Dom0), and its power state."""

from __future__ import annotations

from dataclasses import dataclass

from sova.model.actions.base import Action


@dataclass(frozen=True)
class SetDom0Weight(Action, kind="set-dom0-weight"):
    host: str
    weight: int

    def host_marks(self) -> tuple[tuple[str, str], ...]:
        return (("dom0", self.host),)


@dataclass(frozen=True)
class SetHostPower(Action, kind="set-host-power"):
    """Put an empty host to sleep (ACPI S3) or switch it off (S5), or wake it ("on")."""

    host: str
    state: str  # on | sleep | off

    def host_marks(self) -> tuple[tuple[str, str], ...]:
        return (("wake" if self.state == "on" else "sleep", self.host),)


@dataclass(frozen=True)
class FenceHost(Action, kind="fence-host"):
    """Make sure a host declared failed runs no VM any more (power it off, or destroy its domains) before
    its VMs start elsewhere: a host that only stopped reporting may still run them, on the same disks."""

    host: str
    acts_on_silent_host = True  # its host is silent by definition

    def host_marks(self) -> tuple[tuple[str, str], ...]:
        return (("fence", self.host),)
