"""Every paper's experiments and claims, in the order docs/fidelity.md shows them."""

from __future__ import annotations

from sova.report.fidelity import cloudscope, saslo, sova_paper, sriov, virtue
from sova.report.fidelity.claims import Claim, Experiment

PAPERS = (cloudscope, saslo, sova_paper, sriov, virtue)
EXPERIMENTS: list[Experiment] = [e for paper in PAPERS for e in paper.EXPERIMENTS]
CLAIMS: list[Claim] = [c for paper in PAPERS for c in paper.CLAIMS]


def experiment(name: str) -> Experiment:
    for candidate in EXPERIMENTS:
        if candidate.name == name:
            return candidate
    raise KeyError(f"no fidelity experiment {name!r}; there are {', '.join(e.name for e in EXPERIMENTS)}")
