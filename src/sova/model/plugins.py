"""Plugins register themselves when their module is imported: the registries of policies, analyzers and
workload kinds import every module of their package once, on first use, so that adding a plugin means
adding a module and nothing else."""

from __future__ import annotations

import importlib
import pkgutil

_imported: set[str] = set()


def import_modules(package: str) -> None:
    """Import every module of `package` (and of its subpackages) once."""
    if package in _imported:
        return
    root = importlib.import_module(package)
    for module in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        importlib.import_module(module.name)
    _imported.add(package)
