"""The policy interface and registry.

A policy is a class with a ``name``, a ``schema`` of its parameters (validated up front, documented from the
same description), the ``analyzers`` whose findings it plans from, and
``plan(knowledge, findings) -> list[Action]``. It runs every ``period`` seconds in the ``local``
(per-host agent) or ``global`` (manager) loop; the Runtime's Analyze stage runs the analyzers first and
hands their findings to ``plan``. Adding a policy means adding a module in ``sova.plan`` that defines a
subclass with the ``@register`` decorator; nothing else.

Policies of one profile compose (docs/policies.md): each has a ``priority`` (a parameter; its class's
default) by which the runtime settles conflicting actions, and may take part in the others' decisions at
three extension points: ``filter_hosts`` (where a VM may not go), ``score_hosts`` (where it had better go)
and ``pinned`` (which VMs may not be moved). A policy sees how its earlier actions ended in ``outcomes``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from sova.analyze.base import registry as analyzer_registry
from sova.analyze.findings import Findings
from sova.model.actions import Action, Outcome
from sova.model.knowledge import Knowledge
from sova.model.plugins import import_modules
from sova.model.schema import Field

_REGISTRY: dict[str, type[Policy]] = {}

# the two kinds of policy, by how the runtime drives them (Runtime.tick dispatches on ``Policy.kind``)
PLANNER = "planner"  # each period: its analyzers, then plan() -> actions, through the arbiter and the executor
CONTROLLER = "controller"  # a fast local loop on its VMs' counters (plan/storage/io_control.py)


class Policy(ABC):
    name: ClassVar[str] = ""
    loop: ClassVar[str] = "global"
    kind: ClassVar[str] = PLANNER  # how the runtime drives it: PLANNER or CONTROLLER
    summary: ClassVar[str] = ""
    schema: ClassVar[dict[str, Field]] = {}
    # the analyzers whose findings plan() reads, each with the settings it takes from a parameter of another
    # name ({"hotspot": {"threshold": "alpha"}}); its other settings come from the parameters of their name
    analyzers: ClassVar[dict[str, dict[str, str]]] = {}
    patient: ClassVar[bool] = False  # its plans' migrations wait while a migration cap is full (an evacuation)
    priority: ClassVar[int] = 0  # the default of its `priority` parameter: who wins a conflict
    # (a, b): parameter a may not exceed parameter b (k of n observations; a target under its threshold)
    ordered: ClassVar[tuple[tuple[str, str], ...]] = ()

    def __init__(self, **settings: Any):
        self.settings = settings  # the values of this instance; the class's `schema` says what each one is
        self.period: float = settings.get("period", 10.0)

    # the profile's other policies whose filters and pins bind this one (set by the runtime): those not of a
    # lower priority; their scores guide it whatever their priority
    peers: tuple[Policy, ...] | list[Policy] = ()
    scorers: tuple[Policy, ...] | list[Policy] = ()

    @property
    def rank(self) -> int:
        """Its priority: the `priority` parameter, else its class's."""
        return getattr(self, "settings", {}).get("priority", type(self).priority)

    @property
    def outcomes(self) -> list[tuple[Action, Outcome]]:
        """How this policy's actions ended since its last round (finished, failed, rejected, expired): the
        runtime fills it, and empties it after each round."""
        return self.__dict__.setdefault("_outcomes", [])

    @property
    def notes(self) -> list[tuple[str, str]]:
        """(target, text) for the audit log, taken after each round: what it could not do, and why."""
        return self.__dict__.setdefault("_notes", [])

    @property
    def counts(self) -> dict[str, int]:
        """What it counted over the run, by name, for the run's summary (``policy_counts``)."""
        return self.__dict__.setdefault("_counts", {})

    def wants_to_run(self, knowledge: Knowledge) -> bool:
        """Whether this round is worth running (a policy with nothing to watch skips its rounds)."""
        return True

    def analyses(self) -> list[tuple[str, dict[str, Any]]]:
        """(analyzer name, settings) for each analyzer in ``analyzers``, with this instance's values."""
        known = analyzer_registry()
        return [
            (name, {key: self.settings[renamed.get(key, key)] for key in known[name].reads})
            for name, renamed in self.analyzers.items()
        ]

    @abstractmethod
    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        """The actions this policy wants now, each with its reason, from the Knowledge and the findings of
        its analyzers."""

    # ---------------------------------------------------------------- extension points (all optional)
    def filter_hosts(self, knowledge: Knowledge, vm: int, candidates: np.ndarray) -> np.ndarray | None:
        """Of the candidate hosts (a mask) for VM index `vm`, those where this policy lets it go; None: all."""
        return None

    def score_hosts(self, knowledge: Knowledge, vm: int, candidates: np.ndarray) -> np.ndarray | None:
        """Per host, how much this policy would like VM `vm` there (0: no opinion; only the candidates'
        entries are read); None: no opinion anywhere."""
        return None

    def pinned(self, knowledge: Knowledge) -> dict[str, str]:
        """The VMs this policy wants left where they run, each with why."""
        return {}

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Each parameter's default: the settings of an instance nobody configured."""
        return {key: spec.default for key, spec in cls.schema.items()}

    @classmethod
    def defines(cls, point: str) -> bool:
        """Whether it defines the extension point of that name (its own, not the base's no-op)."""
        return getattr(cls, point) is not getattr(Policy, point)

    @classmethod
    def extends(cls) -> bool:
        """Whether it defines an extension point (the runtime hands it to the others only then)."""
        return any(cls.defines(point) for point in ("filter_hosts", "score_hosts", "pinned"))


def register(cls: type[Policy]) -> type[Policy]:
    if not cls.name:
        raise ValueError(f"policy class {cls.__name__} has no name")
    if "period" not in cls.schema:
        raise ValueError(f"policy {cls.name} must declare a 'period' parameter")
    if "priority" not in cls.__dict__.get("schema", {}):  # every policy has one; its default is the class's
        cls.schema = {
            **cls.schema,
            "priority": Field(
                "int", cls.priority, "who wins when policies of a profile want conflicting actions", lo=0, hi=1000
            ),
        }
    known = analyzer_registry()
    for name, renamed in cls.analyzers.items():
        if name not in known:
            raise ValueError(f"policy {cls.name} reads the findings of {name!r}, which is no analyzer")
        unset = [key for key in known[name].reads if renamed.get(key, key) not in cls.schema]
        if unset:
            raise ValueError(f"policy {cls.name} gives analyzer {name} no {', '.join(unset)}")
    _REGISTRY[cls.name] = cls
    return cls


def controllers(policies: list[Policy]) -> list[Policy]:
    """The controllers among a profile's policies."""
    return [p for p in policies if p.kind == CONTROLLER]


def registry() -> dict[str, type[Policy]]:
    """All registered policies; every module of sova.plan is imported on first use."""
    import_modules("sova.plan")
    return dict(_REGISTRY)
