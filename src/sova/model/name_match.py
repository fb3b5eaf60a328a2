"""VM names matched against a scenario's name or glob ('web*', 'cli{i}' once resolved).

A scenario with a workload entry per VM (a trace per VM) names tens of thousands of VMs one by one:
an exact name is a dictionary lookup, and a glob is matched against all names once, then remembered.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

_GLOB = frozenset("*?[")


class NameMatcher:
    """The names, in their order, that a name or glob pattern matches."""

    def __init__(self, names: Iterable[str]):
        self.names = list(names)
        self._known = set(self.names)
        self._globs: dict[str, list[str]] = {}

    def __call__(self, pattern: str) -> list[str]:
        if _GLOB.isdisjoint(pattern):
            return [pattern] if pattern in self._known else []
        if pattern not in self._globs:
            self._globs[pattern] = fnmatch.filter(self.names, pattern)
        return self._globs[pattern]

    def __contains__(self, name: str) -> bool:
        return name in self._known
