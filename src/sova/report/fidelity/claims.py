"""A claim: one number or finding of a paper set beside Sova's measurement of it, and its verdict.

An experiment runs scenarios and reduces them to named metrics (a flat dict of floats); a claim reads its
number from those metrics and judges it: `agree` (within the claim's tolerance of the paper's number, or the
paper's words hold where it gives no number), `direction only` (the paper's direction holds, its number
does not), `miss` (not even the direction), or `fitted` (a constant was fitted to this very point, so it is
not evidence). A miss names its cause and the measurement behind it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

Metrics = dict[str, float]

AGREE, DIRECTION, MISS, FITTED = "agree", "direction only", "miss", "fitted"


@dataclass(frozen=True)
class Experiment:
    """Scenario runs reduced to metrics; `quick` ones are re-run by the test that checks docs/fidelity.md."""

    name: str
    scenarios: tuple[str, ...]  # under scenarios/papers/, for the reader
    measure: Callable[[Path], Metrics]  # the repository root -> metrics
    quick: bool = False


@dataclass(frozen=True)
class Claim:
    """One paper number or finding and how Sova's is read and judged.

    `metric` names Sova's number in the experiment's metrics. With `target` (the paper's number) the error
    is relative, or in points for a unit of "%"; `tolerance` is in the same terms. `bound` (for a paper
    giving "under X") replaces the target test. `direction` is the paper's finding in Sova's metrics.
    """

    paper: str
    figure: str
    quantity: str
    paper_says: str
    experiment: str
    metric: str
    unit: str = ""
    target: float | None = None
    tolerance: float = 0.10
    bound: Callable[[float], bool] | None = None
    direction: Callable[[Metrics], bool] | None = None
    fitted: str = ""
    cause: str | Callable[[Metrics], str] = ""  # why it misses; a function where the cause depends on the side

    def why(self, metrics: Metrics) -> str:
        cause = self.cause(metrics) if callable(self.cause) else self.cause
        return cause or "cause not yet measured"

    def value(self, metrics: Metrics) -> float:
        return metrics[self.metric]

    def error(self, metrics: Metrics) -> float | None:
        """Sova's number minus the paper's: relative, or in points for a percentage."""
        if self.target is None:
            return None
        value = self.value(metrics)
        if self.unit == "%":
            return value - self.target
        return value / self.target - 1.0

    def verdict(self, metrics: Metrics) -> str:
        if self.fitted:
            return FITTED
        close = self._close(metrics)
        holds = self.direction(metrics) if self.direction is not None else close
        if close and holds:
            return AGREE
        return DIRECTION if holds else MISS

    def _close(self, metrics: Metrics) -> bool:
        if self.bound is not None:
            return self.bound(self.value(metrics))
        error = self.error(metrics)
        if error is None:  # words only: the direction is the whole claim
            return self.direction is None or self.direction(metrics)
        return abs(error) <= self.tolerance


def fmt(value: float, unit: str) -> str:
    """A number as the tables print it: three significant figures (two decimals for a ratio), its unit after."""
    if abs(value) < 1e-9:
        value = 0.0
    if unit == "x":
        return f"{value:.2f}x"
    text = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:#.3g}".rstrip(".")
    return f"{text} %" if unit == "%" else f"{text} {unit}".strip()


def fmt_error(claim: Claim, metrics: Metrics) -> str:
    error = claim.error(metrics)
    if error is None:
        return ""
    if claim.unit == "%":
        return f"{error:+.1f} pts"
    return f"{error:+.1%}".replace("%", " %")
