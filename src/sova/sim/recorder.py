"""Outcome metrics of a run: the experimenter's ground truth, recorded from the simulator each step.

Series are kept per step (cluster aggregates, and per host when there are few hosts); response
times are kept per step as (count, floor, mean) so that run-level percentiles are exact for the
model: each request's time is floor + an exponential excess with the step's mean excess.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

PER_HOST_MAX = 64


@dataclass
class Recorder:
    host_names: list[str]
    per_host: bool
    sample_every: float = 0.0
    vm_names: list[str] | None = None  # set to also record per-VM columns
    rows: dict[str, list] = field(default_factory=dict)
    svc: dict[str, list] = field(default_factory=dict)
    batch: list[tuple[int, float]] = field(default_factory=list)
    transfers: list[tuple[int, float]] = field(default_factory=list)
    jobs: list[tuple[int, float, float]] = field(default_factory=list)  # mapreduce: (job, start, end)
    _next: float = 0.0

    def record(self, sim) -> None:
        g = sim.g
        batch = g.pop("batch_done", None)
        if batch:
            self.batch.extend(batch)
        done = g.pop("transfer_done", None)
        if done:
            self.transfers.extend(done)
        jobs = g.pop("jobs_done", None)
        if jobs:
            self.jobs.extend(jobs)
        svc = g.get("svc")
        if svc is not None:
            for k, v in svc.items():
                self.svc.setdefault(k, []).append(np.asarray(v, dtype=float).copy())
        if sim.t + 1e-9 < self._next:
            return
        self._next = sim.t + self.sample_every
        util = g["host_util"]
        row = {
            "time": sim.t,
            "host_util_mean": float(util.mean()),
            "host_util_max": float(util.max()),
            "dom0_util_mean": float((g["dom0_alloc"] / sim.dom0_vcpus).mean()),
            "link_util_max": float(g["link_util"].max()) if len(g["link_util"]) else 0.0,
            "nic_tx_util_max": float(g["nic_tx_util"].max()),
            "nic_rx_util_max": float(g["nic_rx_util"].max()),
            "power_w": float(g["power"].sum()),
            "migrations_active": len(sim.migrations),
            "vfs_in_use": int(sim.vf_used.sum()),
        }
        if svc is not None and len(svc["served"]):
            served = svc["served"].sum()
            row["requests_per_s"] = float(served / sim.dt)
            row["response_time_mean"] = float((svc["mean"] * svc["served"]).sum() / served) if served else float("nan")
            row["requests_dropped"] = float(svc["dropped"].sum())
        if "web_rps" in g:
            row["web_requests_per_s"] = float(g["web_rps"].sum())
        if self.per_host:
            for h, name in enumerate(self.host_names):
                row[f"cpu:{name}"] = float(util[h])
                row[f"nic_tx:{name}"] = float(g["nic_tx_util"][h])
        if self.vm_names is not None:
            src, dst = sim._flow_vm_ends()
            rate = np.where(np.isfinite(g["rate"]), g["rate"], 0.0)
            net = np.bincount(src[src >= 0], weights=rate[src >= 0], minlength=len(self.vm_names))
            net += np.bincount(dst[dst >= 0], weights=rate[dst >= 0], minlength=len(self.vm_names))
            for v, name in enumerate(self.vm_names):
                row[f"vm_cpu:{name}"] = float(g["vm_alloc"][v])
                row[f"vm_net:{name}"] = float(net[v])
                row[f"vm_host:{name}"] = self.host_names[int(sim.vm_host[v])]
        for k, v in row.items():
            self.rows.setdefault(k, []).append(v)

    def series(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(v) for k, v in self.rows.items()}

    def service_stats(self) -> dict[str, np.ndarray] | None:
        """Per service: requests served, mean, p95, p99 over the whole run, and dropped requests."""
        if not self.svc:
            return None
        served = np.stack(self.svc["served"])  # steps x services
        mean = np.stack(self.svc["mean"])
        floor = np.stack(self.svc["floor"])
        dropped = np.stack(self.svc["dropped"]).sum(axis=0)
        total = served.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            avg = (served * mean).sum(axis=0) / total
        excess = np.maximum(mean - floor, 1e-12)
        p95 = np.array(
            [mixture_quantile(served[:, j], floor[:, j], excess[:, j], 0.95) for j in range(served.shape[1])]
        )
        p99 = np.array(
            [mixture_quantile(served[:, j], floor[:, j], excess[:, j], 0.99) for j in range(served.shape[1])]
        )
        return {"served": total, "mean": avg, "p95": p95, "p99": p99, "dropped": dropped}


def mixture_quantile(weight: np.ndarray, floor: np.ndarray, excess: np.ndarray, q: float) -> float:
    """Quantile of a weighted mixture of shifted exponentials (floor + Exp(mean=excess)), by bisection."""
    w = weight.sum()
    if w <= 0:
        return float("nan")
    keep = weight > 0
    wt, fl, ex = weight[keep] / w, floor[keep], excess[keep]
    lo, hi = float(fl.min()), float((fl + ex * np.log(1 / (1 - q)) * 4).max() + 1e-9)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        cdf = (wt * (1 - np.exp(-np.maximum(mid - fl, 0.0) / ex))).sum()
        if cdf < q:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)
