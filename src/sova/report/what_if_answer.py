"""A what-if's answer: per alternative, what the simulator forecasts over the horizon (hot-host time, storage SLO
compliance, web response time, migrations, energy), its difference from doing nothing, the trade-off in the
words the report uses, and its migrations one by one. The same dictionary is `sova what-if --json`'s output
and the API's answer."""

from __future__ import annotations

import math

import numpy as np

from sova.report.metrics import metric_value, present_metrics
from sova.report.tradeoff import tradeoff_sentence

# forecast quantity: its meaning
QUANTITIES = {
    "hot_host_seconds": "seconds some host's CPU was above 90 %",
    "hottest_host_p95": "the hottest host's CPU utilisation, 95th percentile",
    "sc_rate": "storage SLO compliance rate, mean over VMs under an SLO (%)",
    "pf_ratio": "storage performance fluctuation ratio, mean over VMs under an SLO (%)",
    "response_p99": "web response time, 99th percentile (s)",
    "migrations": "migrations started",
    "migration_seconds": "seconds of migration, summed over those that completed",
    "source_cpu_after": "CPU utilisation of the hosts migrations left, mean after the last one ended",
    "energy_kwh": "energy of all hosts (kWh)",
}


def forecast(result) -> dict[str, float | None]:
    """The quantities of one alternative's run (None: the run has nothing to say, e.g. no SLO)."""
    summary = result.summary
    slos = [vm_slo for vm_slo in (summary.get("slo") or {}).values() if "sc_rate" in vm_slo]
    migrations = summary.get("migrations", {})
    return {
        "hot_host_seconds": summary["cpu"]["hot_host_fraction"] * summary["simulated_seconds"],
        "hottest_host_p95": summary["cpu"]["host_util_max_p95"],
        "sc_rate": float(np.mean([vm_slo["sc_rate"] for vm_slo in slos])) if slos else None,
        "pf_ratio": float(np.mean([vm_slo["pf_ratio"] for vm_slo in slos])) if slos else None,
        "response_p99": _finite(metric_value(summary, "services.response_p99")),
        "migrations": migrations.get("count", 0),
        "migration_seconds": migrations.get("time_total", 0.0),
        "source_cpu_after": source_cpu_after(result.series, result.migrations),
        "energy_kwh": summary["energy_kwh"],
    }


MOVES_LISTED = 100  # an alternative's first migrations listed one by one in its answer


def moves(migrations: list) -> list[dict]:
    """An alternative's migrations one by one (the first MOVES_LISTED): which VM went where, when, for how
    long, and what it took (bytes sent, pre-copy rounds): what a migration time forecast stands on."""
    return [
        {
            "vm": m.vm,
            "src": m.src,
            "dst": m.dst,
            "started": round(m.started, 3),
            "seconds": round(m.finished - m.started, 3),
            "bytes": float(m.bytes),
            "rounds": int(m.rounds),
            "status": m.status,
        }
        for m in migrations[:MOVES_LISTED]
    ]


def source_cpu_after(series: dict, migrations: list) -> float | None:
    """The mean CPU utilisation of the hosts the completed migrations left, over the samples whose span starts
    at or after the last one's end: what a relieved host settled at. None without a completed migration, without
    samples after it, or without per-host columns (runs above the recorder's PER_HOST_MAX hosts)."""
    done = [m for m in migrations if m.status == "completed"]
    times = np.asarray(series["time"])
    columns = [f"cpu:{host}" for host in sorted({m.src for m in done})]
    if not done or len(times) < 2 or any(column not in series for column in columns):
        return None
    spacing = float(np.median(np.diff(times)))
    after = times - spacing >= max(m.finished for m in done) - 1e-9
    if not after.any():
        return None
    return float(np.mean([np.asarray(series[column])[after] for column in columns]))


def answer(results: list, horizon: float, source: str = "") -> dict:
    """Per alternative (the first is the baseline, doing nothing): its forecast, the difference from the
    baseline's, and the trade-off sentence."""
    base = results[0]
    metrics = present_metrics([result.summary for result in results])
    base_forecast = forecast(base)
    out = []
    for result in results:
        own = forecast(result)
        entry = {"name": result.profile, "policies": result.summary.get("policies", []), "forecast": own}
        entry["moves"] = moves(result.migrations)
        if result is not base:
            entry["difference"] = {
                key: None if value is None or base_forecast[key] is None else value - base_forecast[key]
                for key, value in own.items()
            }
            entry["tradeoff"] = tradeoff_sentence(base.profile, base.summary, result.profile, result.summary, metrics)
        out.append(entry)
    return {
        "source": source,
        "horizon": horizon,
        "baseline": base.profile,
        "quantities": QUANTITIES,
        "alternatives": out,
    }


def window_quantities(result, start: float, end: float) -> dict[str, float | None]:
    """The forecast's quantities of a run's rows in [start, end) (its steps, migrations, SLO intervals): what a
    what-if forecast is checked against, taken the same way from the forecast's own run."""
    times = np.asarray(result.series["time"])
    inside = (times >= start) & (times < end)
    spacing = float(np.median(np.diff(times))) if len(times) > 1 else 1.0
    hottest = np.asarray(result.series["host_util_max"])[inside]
    started = [m for m in result.migrations if start <= m.started < end]
    slo_rows = [row for row in result.slo_intervals if start < row["time"] <= end]
    sc = [row["sc_rate"] for row in slo_rows if row["sc_rate"] is not None]
    pf = [row["pf_ratio"] for row in slo_rows if row["pf_ratio"] is not None]
    hosts = {key: np.asarray(values)[inside] for key, values in result.series.items() if key.startswith("cpu:")}
    return {
        "hot_host_seconds": float((hottest > 0.9).sum() * spacing),
        "hottest_host_p95": float(np.percentile(hottest, 95)) if len(hottest) else None,
        "sc_rate": float(np.mean(sc)) if sc else None,
        "pf_ratio": float(np.mean(pf)) if pf else None,
        "migrations": len(started),
        "migration_seconds": float(sum(m.finished - m.started for m in started if m.status == "completed")),
        "source_cpu_after": source_cpu_after({"time": times[inside], **hosts}, started),
        "energy_kwh": float(np.asarray(result.series["power_w"])[inside].sum() * spacing / 3.6e6),
    }


def _finite(value) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None
