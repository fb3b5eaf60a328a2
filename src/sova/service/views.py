"""What the manager knows, as plain rows for the API, the dashboard and /metrics: hosts, VMs, VFs and
who holds them, findings, and each host's CPU over time, all from the agents' reports (the Knowledge);
and the plans and audit entries of its store. Times are on the wall clock, with the cluster's beside
them where it runs apart (``cluster_clock``)."""

from __future__ import annotations

import time

import numpy as np

from sova.model.knowledge import Knowledge
from sova.model.placement_rules import hosts_failed, hosts_fenced, hosts_in_maintenance
from sova.service.cluster_clock import ClusterClock, apart
from sova.service.state import PlanRow

LOAD_WINDOW = 10.0  # s over which a utilisation is averaged


def _latest(knowledge: Knowledge):
    return knowledge.latest if len(knowledge) else None


def hosts(knowledge: Knowledge, received: dict[str, float]) -> list[dict]:
    """Every host in the newest observation, with its load and when its agent last reported."""
    snap = _latest(knowledge)
    if snap is None:
        return []
    util = knowledge.host_cpu_util(LOAD_WINDOW)
    counts = np.bincount(snap.vm_host, minlength=len(snap.hosts))
    drained = set(hosts_in_maintenance(knowledge.rules))
    failed, fenced = set(hosts_failed(knowledge.rules)), set(hosts_fenced(knowledge.rules))
    now = time.monotonic()
    return [
        {
            "name": name,
            "cores": float(snap.host_cores[h]),
            "memory_mib": float(snap.host_memory[h]),
            "cpu_utilization": None if util is None else round(float(util[h]), 4),
            "vms": int(counts[h]),
            "vfs_used": int(snap.vfs_used[h]),
            "vfs_total": int(snap.vfs_total[h]),
            "report_age_s": round(now - received[name], 3) if name in received else None,
            "maintenance": name in drained,
            "failed": name in failed,
            "fenced": name in fenced,
        }
        for h, name in enumerate(snap.hosts)
    ]


def vms(knowledge: Knowledge) -> list[dict]:
    """Every VM in the newest observation, with its host and CPU use."""
    snap = _latest(knowledge)
    if snap is None:
        return []
    cores = knowledge.vm_cpu_cores(LOAD_WINDOW)
    return [
        {
            "name": name,
            "host": snap.hosts[snap.vm_host[v]],
            "vcpus": float(snap.vm_vcpus[v]),
            "memory_mib": float(snap.vm_memory[v]),
            "cpu_cores": None if cores is None else round(float(cores[v]), 4),
            "nic": snap.vm_nic[v],
            "migrating": bool(snap.vm_migrating[v]),
        }
        for v, name in enumerate(snap.vms)
    ]


def vfs(knowledge: Knowledge) -> list[dict]:
    """Each host's VFs: how many, and the VMs holding one (a NIC other than the para-virtual vNIC)."""
    snap = _latest(knowledge)
    if snap is None:
        return []
    holders: dict[int, list[str]] = {}
    for v, nic in enumerate(snap.vm_nic):
        if nic != "vnic":
            holders.setdefault(int(snap.vm_host[v]), []).append(snap.vms[v])
    return [
        {"host": name, "total": int(snap.vfs_total[h]), "used": int(snap.vfs_used[h]), "holders": holders.get(h, [])}
        for h, name in enumerate(snap.hosts)
    ]


def findings(latest: dict, clock: ClusterClock) -> list[dict]:
    """The findings each policy planned from at its latest round (``Runtime.findings``)."""
    rows = []
    for policy, found in latest.items():
        wall_time = clock.to_wall(found.time)
        for finding in found:
            rows.append(
                {
                    "policy": policy,
                    "time": wall_time,
                    "sim_time": apart(found.time, wall_time),
                    "kind": finding.kind,
                    "host": finding.host,
                    "notable": finding.notable,
                    "text": finding.describe(),
                    "fields": finding.to_dict(),
                }
            )
    return rows


def plan(row: PlanRow, forecast: dict | None = None) -> dict:
    """A plan as the API shows it: its times on the wall clock (the cluster's where a row from before the
    store kept the wall clock's has only those), the cluster's beside them where it runs apart; and its
    forecast, if it has one (StateStore.forecasts)."""
    created = row.created if row.created_wall is None else row.created_wall
    decided_at = row.decided_at if row.decided_wall is None else row.decided_wall
    return {
        "id": row.id,
        "created": created,
        "sim_created": apart(row.created, created),
        "policy": row.policy,
        "state": row.state,
        "actions": row.actions,
        "findings": row.findings,
        "decided_at": decided_at,
        "sim_decided_at": apart(row.decided_at, decided_at),
        "decided_by": row.decided_by,
        "forecast": forecast,
    }


def audit_entry(row: dict) -> dict:
    """An audit entry as the API shows it: its time as a plan's (``plan``)."""
    cluster_time = row["time"]
    wall_time = cluster_time if row["wall_time"] is None else row["wall_time"]
    shown = {key: value for key, value in row.items() if key != "wall_time"}
    return shown | {"time": wall_time, "sim_time": apart(cluster_time, wall_time)}


def host_series(knowledge: Knowledge, seconds: float, clock: ClusterClock, points: int = 120) -> dict:
    """Each host's CPU utilisation over the last `seconds` of the cluster's clock (at most `points`
    samples, each the mean since the one before), for the dashboard's chart."""
    snap = _latest(knowledge)
    if snap is None or len(knowledge) < 2:
        return {"times": [], "sim_times": None, "hosts": {}}
    first = max(knowledge.snapshots[0].time, snap.time - seconds)
    step = (snap.time - first) / points
    times, series = [], {name: [] for name in snap.hosts}
    for k in range(1, points + 1 if step > 0 else 1):  # at most `points`, however short the span
        end = first + k * step
        util = knowledge.host_cpu_util(step, end=end)
        at = knowledge.at_or_before(end)
        if util is not None and at is not None:
            times.append(round(end, 3))
            values = dict(zip(at.hosts, util, strict=True))
            for name in series:
                value = values.get(name)
                series[name].append(None if value is None else round(float(value), 4))
    wall_times = [round(clock.to_wall(end), 3) for end in times]
    runs_apart = bool(times) and apart(times[-1], wall_times[-1]) is not None
    return {"times": wall_times, "sim_times": times if runs_apart else None, "hosts": series}
