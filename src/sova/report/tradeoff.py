"""How a profile compares with the first (the baseline): the difference per metric, and the trade-off in words.

A difference *matters* when both values are finite numbers, they differ as displayed (the table's precision:
0.0 s against 0.0 s is no difference), and the difference is at least MATERIAL_FRACTION (2 %) of the larger of
the two magnitudes. Only such differences are marked better or worse, in the table and in the sentence. The
precision part alone would mark 100.0 % against 99.9 %; the relative part alone would mark 0.0010 ms against
0.0012 ms, both shown as 0.00 ms. Two percent is a choice: small enough to name the quickstart's +3 % energy,
the cost of the threshold profile's migrations, large enough to pass over its +1 % Dom0 utilisation. Profiles
run on the same seed, and across seeds 1-6 the quickstart's default profile keeps its response times, CPU
and energy within 0.2 %, so a 2 % difference in those is the policy's doing, not the workload's.
"""

from __future__ import annotations

from dataclasses import dataclass

from sova.report.metrics import Metric, is_number, metric_value
from sova.report.names import join_words

MATERIAL_FRACTION = 0.02


@dataclass(frozen=True)
class Difference:
    """One metric of a profile against the baseline's."""

    metric: Metric
    base: object
    other: object
    matters: bool
    better: bool | None  # None: no direction, not a number, or a difference that does not matter

    @property
    def absolute(self) -> float | None:
        return self.other - self.base if is_number(self.base) and is_number(self.other) else None

    @property
    def relative(self) -> float | None:
        """(other - base) / |base|; None when the base is 0 or either value is not a number."""
        if self.absolute is None or self.base == 0:
            return None
        return self.absolute / abs(self.base)

    def text(self) -> str:
        """The difference as the table shows it: "+0.02 ms (+9.1%)", "-64.6 pp (-97%)", "same" or "–";
        the relative change with one decimal below 10 %, so that 1.5 % does not read as 2 %."""
        if self.absolute is None:
            return "–"
        if self.metric.unit.show(self.base) == self.metric.unit.show(self.other):
            return "same"
        shown = self.metric.unit.show_difference(self.absolute)
        if self.relative is None:
            return shown
        relative = f"{self.relative:+.1%}" if abs(self.relative) < 0.1 else f"{self.relative:+.0%}"
        return f"{shown} ({relative})"


def matters(metric: Metric, base, other) -> bool:
    """Whether two values of a metric differ enough to mark: see the module's docstring for the rule."""
    if not (is_number(base) and is_number(other)):
        return False
    if metric.unit.show(base) == metric.unit.show(other):
        return False
    return abs(other - base) >= MATERIAL_FRACTION * max(abs(base), abs(other))


def compare(metric: Metric, base_summary: dict, other_summary: dict) -> Difference:
    base, other = metric_value(base_summary, metric.path), metric_value(other_summary, metric.path)
    material = matters(metric, base, other)
    better = None
    if material and metric.lower_is_better is not None:
        better = (other < base) == metric.lower_is_better
    return Difference(metric, base, other, material, better)


def tradeoff_sentence(base_name: str, base: dict, other_name: str, other: dict, metrics: list[Metric]) -> str:
    """The profile against the baseline in one sentence: the topics it is better and worse on.

    A topic (e.g. "response time") where some metrics are better and others worse is "mixed". Each
    topic names its largest change as "before → after", so the sentence stands without the table.
    """
    better: dict[str, list[Difference]] = {}
    worse: dict[str, list[Difference]] = {}
    for metric in metrics:
        d = compare(metric, base, other)
        if d.better is not None and metric.topic:
            (better if d.better else worse).setdefault(metric.topic, []).append(d)
    shared = {m.topic for m in metrics if sum(x.topic == m.topic for x in metrics) > 1}
    mixed = [t for t in better if t in worse]
    better = {t: ds for t, ds in better.items() if t not in mixed}
    worse = {t: ds for t, ds in worse.items() if t not in mixed}
    if not (better or worse or mixed):
        return (
            f"{other_name} and {base_name} differ by less than {MATERIAL_FRACTION:.0%} "
            "(or less than the precision shown) on every metric where one way is better."
        )
    clauses = []
    if better:
        only = " only" if len(better) == 1 and (worse or mixed) else ""
        clauses.append(f"better{only} on {_topics(better, shared)}")
    if worse:
        clauses.append(f"worse on {_topics(worse, shared)}")
    if mixed:
        clauses.append(f"mixed on {join_words(mixed)}")
    if not better:
        clauses.append("better on nothing")
    return f"Against {base_name}, {other_name} is " + "; ".join(clauses) + "."


def _topics(by_topic: dict[str, list[Difference]], shared: set[str]) -> str:
    return join_words([f"{topic} ({_largest(ds, topic in shared)})" for topic, ds in by_topic.items()])


def _largest(diffs: list[Difference], named: bool) -> str:
    """The topic's largest relative change as "before → after", after its metric's label if the topic has several."""
    d = max(diffs, key=lambda x: abs(x.absolute) / max(abs(x.base), abs(x.other)))
    unit = d.metric.unit
    change = f"{unit.show(d.base)} → {unit.show(d.other)}"
    return f"{d.metric.label}: {change}" if named else change
