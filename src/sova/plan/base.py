"""The policy interface and registry.

A policy is a class with a ``name``, a ``params`` schema (validated up front, documented from the
same description), the ``analyzers`` whose findings it plans from, and
``plan(knowledge, findings) -> list[Action]``. It runs every ``period`` seconds in the ``local``
(per-host agent) or ``global`` (manager) loop; the Runtime's Analyze stage runs the analyzers first and
hands their findings to ``plan``. Adding a policy means adding a module in ``sova.plan`` that defines a
subclass with the ``@register`` decorator; nothing else.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from sova.analyze.base import registry as analyzer_registry
from sova.analyze.findings import Findings
from sova.model.actions import Action
from sova.model.knowledge import Knowledge
from sova.model.plugins import import_modules
from sova.model.schema import Field

_REGISTRY: dict[str, type[Policy]] = {}


class Policy(ABC):
    name: ClassVar[str] = ""
    loop: ClassVar[str] = "global"
    summary: ClassVar[str] = ""
    params: ClassVar[dict[str, Field]] = {}
    # the analyzers whose findings plan() reads, each with the settings it takes from a parameter of another
    # name ({"hotspot": {"threshold": "alpha"}}); its other settings come from the parameters of their name
    analyzers: ClassVar[dict[str, dict[str, str]]] = {}
    patient: ClassVar[bool] = False  # its plans' migrations wait while a migration cap is full (an evacuation)

    def __init__(self, **params: Any):
        self.settings = params  # the values of this instance; `params` (the class's) says what each one is
        self.period: float = params.get("period", 10.0)

    @property
    def notes(self) -> list[tuple[str, str]]:
        """(target, text) for the audit log, taken after each round: what it could not do, and why."""
        return self.__dict__.setdefault("_notes", [])

    def wants_to_run(self, knowledge: Knowledge) -> bool:
        """Whether this round is worth running (a policy with nothing to watch skips its rounds)."""
        return True

    def analyses(self) -> list[tuple[str, dict[str, Any]]]:
        """(analyzer name, settings) for each analyzer in ``analyzers``, with this instance's values."""
        known = analyzer_registry()
        return [
            (name, {key: self.settings[renamed.get(key, key)] for key in known[name].settings})
            for name, renamed in self.analyzers.items()
        ]

    @abstractmethod
    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        """The actions this policy wants now, each with its reason, from the Knowledge and the findings of
        its analyzers."""


def register(cls: type[Policy]) -> type[Policy]:
    if not cls.name:
        raise ValueError(f"policy class {cls.__name__} has no name")
    if "period" not in cls.params:
        raise ValueError(f"policy {cls.name} must declare a 'period' parameter")
    known = analyzer_registry()
    for name, renamed in cls.analyzers.items():
        if name not in known:
            raise ValueError(f"policy {cls.name} reads the findings of {name!r}, which is no analyzer")
        unset = [key for key in known[name].settings if renamed.get(key, key) not in cls.params]
        if unset:
            raise ValueError(f"policy {cls.name} gives analyzer {name} no {', '.join(unset)}")
    _REGISTRY[cls.name] = cls
    return cls


def registry() -> dict[str, type[Policy]]:
    """All registered policies; every module of sova.plan is imported on first use."""
    import_modules("sova.plan")
    return dict(_REGISTRY)
