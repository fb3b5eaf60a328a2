"""A VM's SR-IOV virtual function: hot-plugged (traffic moves off the para-virtual vNIC, which stays as the
standby), unplugged (traffic back on the vNIC), and its rate tier."""

from __future__ import annotations

from dataclasses import dataclass

from sova.model.actions.base import Action


@dataclass(frozen=True)
class AttachVF(Action, kind="attach-vf"):
    vm: str
    rate: float = 0.0  # bit/s cap of the VF's rate tier (0: uncapped)


@dataclass(frozen=True)
class DetachVF(Action, kind="detach-vf"):
    vm: str


@dataclass(frozen=True)
class SetVFRate(Action, kind="set-vf-rate"):
    vm: str
    rate: float
