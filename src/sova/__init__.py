"""Sova: an autonomic resource manager for virtualized data centers.

The package is layered in floors (see DESIGN.md): ``model`` at the bottom; ``sim``, ``analyze`` and ``plan``
on it; ``drivers`` on ``sim``; ``control`` on all of those; ``report`` and ``cli`` on top.
"""

__version__ = "0.1.0"
