"""Typed actions a plan is made of, and the outcome of applying one.

Actions are plain data with the reason they were chosen, so they can be logged, shown, approved and
replayed. A driver applies them; the executor decides whether they may be applied at all. Each kind is a
class of one module here (``base`` says what every kind declares); a new kind is one more module, imported
below, and a handler for it in each driver.
"""

from sova.model.actions.base import (
    ACTION_KINDS,
    CANCELLED,
    DRY_RUN,
    EXPIRED,
    FAILED,
    OK,
    PENDING,
    REJECTED,
    RUNNING,
    TIMEOUT,
    Action,
    KindTable,
    Outcome,
)
from sova.model.actions.host_settings import FenceHost, SetDom0Weight, SetHostPower
from sova.model.actions.migrate import Migrate
from sova.model.actions.vf_attachment import AttachVF, DetachVF, SetVFRate
from sova.model.actions.vm_boot import CreateVM, RestartVM
from sova.model.actions.vm_tuning import SetCpu, SetIoLimit, SetIoSize, SetIoTarget, SetNetLimit

__all__ = [
    "ACTION_KINDS",
    "CANCELLED",
    "DRY_RUN",
    "EXPIRED",
    "FAILED",
    "OK",
    "PENDING",
    "REJECTED",
    "RUNNING",
    "TIMEOUT",
    "Action",
    "AttachVF",
    "CreateVM",
    "DetachVF",
    "FenceHost",
    "KindTable",
    "Migrate",
    "Outcome",
    "RestartVM",
    "SetCpu",
    "SetDom0Weight",
    "SetHostPower",
    "SetIoLimit",
    "SetIoSize",
    "SetIoTarget",
    "SetNetLimit",
    "SetVFRate",
]
