"""Every paper's experiments and claims, in the order docs/fidelity.md shows them."""

from __future__ import annotations

from sova.report.fidelity import cloudscope_claims, saslo_claims, sova_claims, sriov_claims, virtue_claims
from sova.report.fidelity.claims import Claim, Experiment

PAPERS = (cloudscope_claims, saslo_claims, sova_claims, sriov_claims, virtue_claims)
EXPERIMENTS: list[Experiment] = [e for paper in PAPERS for e in paper.EXPERIMENTS]
CLAIMS: list[Claim] = [c for paper in PAPERS for c in paper.CLAIMS]


def experiment(name: str) -> Experiment:
    for candidate in EXPERIMENTS:
        if candidate.name == name:
            return candidate
    raise KeyError(f"no fidelity experiment {name!r}; there are {', '.join(e.name for e in EXPERIMENTS)}")
