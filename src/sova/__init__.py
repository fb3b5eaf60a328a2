"""Sova: an autonomic resource manager for virtualized data centers.

The package is layered in floors (docs/architecture.md): ``model`` at the bottom; ``sim`` and ``analyze`` on
it; ``plan`` and ``drivers`` on those; ``control`` (the loop) and ``lab``; ``experiments``; ``report``;
``service`` and ``cli`` on top.
"""

__version__ = "0.1.0"
