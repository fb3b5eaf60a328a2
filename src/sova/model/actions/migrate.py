"""Live migration of a VM to another host (pre-copy, or post-copy where the simulator or QEMU is told to)."""

from __future__ import annotations

from dataclasses import dataclass

from sova.model.actions.base import Action


@dataclass(frozen=True)
class Migrate(Action, kind="migrate"):
    vm: str
    dst: str

    moves_vm = True

    @property
    def placed_on(self) -> str:
        return self.dst
