"""The analyzer interface and registry, and the Analyze stage that runs analyzers for the policies.

An analyzer is a class with a ``name``, the names of the settings it ``reads``, and
``analyze(knowledge, settings)`` giving its findings; one that reads further back than the
Knowledge's usual history says how far (``span``). A policy names the analyzers whose findings it
plans from (``Policy.analyzers``) and gives their settings from its own parameters. Adding an analyzer
means adding a module in ``sova.analyze`` that defines a subclass with the ``@register`` decorator.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from sova.analyze.findings import Finding, Findings, HostColumns
from sova.model.knowledge import Knowledge
from sova.model.plugins import import_modules

_REGISTRY: dict[str, Analyzer] = {}


class Analyzer(ABC):
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    reads: ClassVar[tuple[str, ...]] = ()  # the names of the settings analyze() reads

    def span(self, settings: Mapping[str, Any]) -> float:
        """Seconds of history analyze() reads back from now; the runtime's Knowledge keeps at least that."""
        return 0.0

    @abstractmethod
    def analyze(self, knowledge: Knowledge, settings: Mapping[str, Any]) -> Sequence[Finding]:
        """The findings on the Knowledge as it is now (none while its history is too short): a tuple, or a
        HostColumns for a finding about every host."""


def register(cls: type[Analyzer]) -> type[Analyzer]:
    if not cls.name:
        raise ValueError(f"analyzer class {cls.__name__} has no name")
    _REGISTRY[cls.name] = cls()
    return cls


def registry() -> dict[str, Analyzer]:
    """All registered analyzers; every module of sova.analyze is imported on first use."""
    import_modules("sova.analyze")
    return dict(_REGISTRY)


class AnalyzeStage:
    """The Analyze stage over one state of the Knowledge: each analyzer runs once per distinct settings,
    and every policy that asks for the same analyzer with the same settings gets the same findings."""

    def __init__(self, knowledge: Knowledge):
        self.knowledge = knowledge
        self._found: dict[tuple[str, tuple], Sequence[Finding]] = {}

    def findings(self, requests: Iterable[tuple[str, Mapping[str, Any]]]) -> Findings:
        """The findings of the (analyzer name, settings) requests, in request order."""
        analyzers = registry()
        found: list[Finding | HostColumns] = []
        for name, settings in requests:
            key = (name, tuple(sorted(settings.items())))
            if key not in self._found:
                self._found[key] = analyzers[name].analyze(self.knowledge, settings)
            result = self._found[key]
            if isinstance(result, HostColumns):
                found.append(result)  # kept whole: its findings are made only if read
            else:
                found += result
        return Findings.collect(self.knowledge.latest.time, found)
