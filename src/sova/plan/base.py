"""The policy interface and registry.

A policy is a class with a ``name``, a ``params`` schema (validated up front, documented from the
same description) and ``plan(knowledge) -> list[Action]``. It runs every ``period`` seconds in the
``local`` (per-host agent) or ``global`` (manager) loop. Adding a policy means adding a module in
``sova.plan`` that defines a subclass with the ``@register`` decorator; nothing else.
"""

from __future__ import annotations

import importlib
import pkgutil
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from sova.model.actions import Action
from sova.model.knowledge import Knowledge
from sova.model.schema import Field

_REGISTRY: dict[str, type[Policy]] = {}


class Policy(ABC):
    name: ClassVar[str] = ""
    loop: ClassVar[str] = "global"
    summary: ClassVar[str] = ""
    params: ClassVar[dict[str, Field]] = {}

    def __init__(self, **params: Any):
        self.settings = params  # the values of this instance; `params` (the class's) says what each one is
        self.period: float = params.get("period", 10.0)

    @abstractmethod
    def plan(self, knowledge: Knowledge) -> list[Action]:
        """The actions this policy wants now, each with its reason."""


def register(cls: type[Policy]) -> type[Policy]:
    if not cls.name:
        raise ValueError(f"policy class {cls.__name__} has no name")
    if "period" not in cls.params:
        raise ValueError(f"policy {cls.name} must declare a 'period' parameter")
    _REGISTRY[cls.name] = cls
    return cls


_discovered = False


def registry() -> dict[str, type[Policy]]:
    """All registered policies; every module of sova.plan is imported on first use."""
    global _discovered
    if not _discovered:
        import sova.plan as pkg

        for mod in pkgutil.walk_packages(pkg.__path__, prefix="sova.plan."):
            importlib.import_module(mod.name)
        _discovered = True
    return dict(_REGISTRY)
