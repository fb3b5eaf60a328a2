"""The outcome metrics a report shows of each profile: where each sits in a summary, its unit, which way is better.

One table (METRICS) serves the HTML report, its difference column and trade-off sentence, and the terminal
summary, so the three always agree on labels, units and precision. A value that is missing, null or not a
finite number is shown as "n/a" with the reason, from the summary's "undefined" table (dotted path -> why)
when the run gave one.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

NOT_AVAILABLE = "n/a"
NO_VALUE = "no value in this run"
NOT_FINITE = "not a finite number in this run (e.g. a ratio with nothing to divide by)"


@dataclass(frozen=True)
class Unit:
    """How a metric is displayed: value x scale with `decimals` decimals, then the suffix."""

    scale: float
    decimals: int
    suffix: str
    diff_suffix: str | None = None  # the difference's unit when it is another one (percentage points)

    def show(self, value: float) -> str:
        return f"{value * self.scale:,.{self.decimals}f}{self.suffix}"

    def show_difference(self, difference: float) -> str:
        suffix = self.suffix if self.diff_suffix is None else self.diff_suffix
        return f"{difference * self.scale:+,.{self.decimals}f}{suffix}"


PERCENT = Unit(100, 1, "%", " pp")
MILLISECONDS = Unit(1e3, 2, " ms")
SECONDS = Unit(1, 1, " s")
COUNT = Unit(1, 0, "")
GIB = Unit(2**-30, 2, " GiB")
KWH = Unit(1, 3, " kWh")
REQUESTS_PER_S = Unit(1, 1, " req/s")
GBPS = Unit(1, 3, " Gb/s")
MB_PER_S = Unit(1e-6, 1, " MB/s")
RATIO = Unit(1, 3, "x")


@dataclass(frozen=True)
class Metric:
    """One row of the profiles table.

    `topic` names what the metric says in the trade-off sentence ("the hottest host's CPU"); metrics that share a
    topic are one item there. `lower_is_better` is None where neither way is better (utilisation, counts of
    proposed actions). `brief` rows are the ones the terminal prints.
    """

    section: str
    label: str
    path: str
    unit: Unit
    lower_is_better: bool | None
    topic: str = ""
    brief: bool = False


METRICS = [
    Metric("CPU", "mean host utilisation", "cpu.host_util_mean", PERCENT, None),
    Metric(
        "CPU", "hottest host, 95th percentile", "cpu.host_util_max_p95", PERCENT, True, "the hottest host's CPU", True
    ),
    Metric(
        "CPU", "time with a host above 90 %", "cpu.hot_host_fraction", PERCENT, True, "the hottest host's CPU", True
    ),
    Metric("CPU", "mean Dom0 utilisation", "cpu.dom0_util_mean", PERCENT, None),
    Metric("Web services", "requests served", "services.served", COUNT, False, "requests served", True),
    Metric("Web services", "requests dropped (timeout)", "services.dropped", COUNT, True, "dropped requests", True),
    Metric("Web services", "mean response time", "services.response_mean", MILLISECONDS, True, "response time", True),
    Metric("Web services", "p95 response time", "services.response_p95", MILLISECONDS, True, "response time"),
    Metric("Web services", "p99 response time", "services.response_p99", MILLISECONDS, True, "response time", True),
    Metric("Web services", "throughput", "services.throughput_rps", REQUESTS_PER_S, False, "throughput"),
    Metric("Batch jobs", "jobs completed", "batch.jobs", COUNT, False, "batch jobs completed", True),
    Metric("Batch jobs", "mean completion time", "batch.completion_mean", SECONDS, True, "batch job time", True),
    Metric("MapReduce jobs", "jobs completed", "mapreduce.jobs", COUNT, False, "MapReduce jobs completed"),
    Metric("MapReduce jobs", "mean job time", "mapreduce.completion_mean", SECONDS, True, "MapReduce job time", True),
    Metric("File transfers", "completed", "transfers.completed", COUNT, False, "transfers completed", True),
    Metric("File transfers", "mean transfer time", "transfers.completion_mean", SECONDS, True, "transfer time", True),
    Metric("Storage", "mean IOPS", "storage.iops_mean", COUNT, False, "IOPS"),
    Metric("Interference", "predicted V-slowdown, mean", "interference.slowdown_mean", RATIO, True, "slowdown"),
    Metric("Interference", "predicted V-slowdown, largest", "interference.slowdown_max", RATIO, True, "slowdown"),
    Metric("Storage", "mean throughput", "storage.throughput_mean", MB_PER_S, False, "storage throughput"),
    Metric("Storage", "mean IO latency", "storage.latency_mean", MILLISECONDS, True, "IO latency"),
    Metric("Network", "mean of max NIC tx utilisation", "network.nic_tx_util_max_mean", PERCENT, True, "NIC use", True),
    Metric("Network", "mean of max link utilisation", "network.link_util_max_mean", PERCENT, True, "fabric link use"),
    Metric("Network", "VM traffic sent", "network.guest_tx_gbps", GBPS, None),
    Metric("Network", "VM traffic received", "network.guest_rx_gbps", GBPS, None),
    Metric("Migrations", "completed", "migrations.completed", COUNT, None, brief=True),
    Metric("Migrations", "failed or cancelled", "migrations.failed", COUNT, True, "failed migrations", True),
    Metric("Migrations", "total time", "migrations.time_total", SECONDS, True, "migration cost"),
    Metric("Migrations", "data moved", "migrations.bytes", GIB, True, "migration cost"),
    Metric("Migrations", "mean downtime", "migrations.downtime_mean", MILLISECONDS, True, "migration cost"),
    Metric("VMs that came and went", "arrived", "lifecycle.arrived", COUNT, None),
    Metric("VMs that came and went", "deleted", "lifecycle.deleted", COUNT, None),
    Metric("VMs that came and went", "mean wait for a host", "lifecycle.wait_mean", SECONDS, True, "admission wait"),
    Metric("VMs that came and went", "never placed", "lifecycle.never_placed", COUNT, True, "VMs never placed", True),
    Metric("Actions", "proposed", "actions.proposed", COUNT, None),
    Metric("Actions", "rejected by safety rails", "actions.rejected", COUNT, None),
    Metric("Energy", "energy", "energy_kwh", KWH, True, "energy", True),
    Metric("Run", "simulated s per wall s", "speed", COUNT, None, brief=True),
]


def metric_at(path: str) -> Metric:
    """The metric at a dotted summary path."""
    return next(m for m in METRICS if m.path == path)


def metric_value(summary: dict, path: str):
    """The value at a dotted path of a summary ('services.response_mean'), or None."""
    value = summary
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def is_number(value) -> bool:
    """A finite number, numpy's included (a bool is not one): what can be shown, compared and subtracted."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def undefined_reason(summary: dict, path: str) -> str | None:
    """Why the metric at `path` has no number: the run's own reason, else a generic one; None if it has one."""
    value = metric_value(summary, path)
    if is_number(value):
        return None
    reason = (summary.get("undefined") or {}).get(path)
    if reason:
        return str(reason)
    return NO_VALUE if value is None else NOT_FINITE


def format_value(value, unit: Unit) -> str:
    """The value in its unit, or "n/a" when it is not a finite number (never "nan ms")."""
    return unit.show(value) if is_number(value) else NOT_AVAILABLE


def present_metrics(summaries: list[dict]) -> list[Metric]:
    """The metrics at least one of the summaries has (a key, even if null): a run without web services
    has no web-service rows, while an undefined response time keeps its row to say why."""
    return [m for m in METRICS if any(_has_key(s, m.path) for s in summaries)]


def _has_key(summary: dict, path: str) -> bool:
    *parents, last = path.split(".")
    node = metric_value(summary, ".".join(parents)) if parents else summary
    return isinstance(node, dict) and last in node
