"""Outcome metrics of a run: the experimenter's ground truth, recorded from the simulator each step.

Series are kept per step (cluster aggregates, and per host when there are few hosts); response
times are kept per step as (count, floor, mean) so that run-level percentiles are exact for the
model: each request's time is floor + an exponential excess with the step's mean excess.

Above PER_HOST_MAX hosts a column per host would make the CSV and the plots unreadable, so the
recorder keeps instead what a reader of a large run asks for: the distribution across hosts per step
(percentiles, ``cpu_p5`` ... ``nic_tx_p95``) and the few hottest and coolest hosts over the run
(``cpu_hottest:HOST``, ``cpu_coolest:HOST``, ``nic_tx_hottest:HOST``, ``nic_tx_coolest:HOST``, chosen
by their mean of that metric over the run; see HostHistory).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sova.sim.events import BatchDone, JobDone, TransferDone

PER_HOST_MAX = 64
HOST_PERCENTILES = (5, 25, 50, 75, 95)  # the bands a large run's per-host plots draw
EXTREME_HOSTS = 3  # hottest and coolest hosts a large run keeps series of


class HostHistory:
    """Every host's CPU and NIC tx utilisation over time, in bounded memory, to name the extreme hosts.

    Which hosts are hottest is known only at the end of a run, so every host's values are kept, as
    float32 in at most `rows` rows: when the rows are full, adjacent rows are averaged pairwise and
    each row thereafter holds the mean of twice as many samples. Memory is 2 x rows x hosts x 4 bytes
    (4 MB for 1,000 hosts) whatever the run's length, and adding a sample is one vector add; the plots
    smooth over about 2 % of a run anyway (a row spans at most 0.4 %), so block means lose nothing a
    reader sees. The exact per-host sums rank the hosts.
    """

    def __init__(self, host_names: list[str], rows: int = 512) -> None:
        self.host_names = host_names
        self.blocks = np.zeros((2, rows, len(host_names)), dtype=np.float32)  # [cpu, nic_tx] x row x host
        self.full_rows = 0
        self.samples_per_row = 1
        self._partial = np.zeros((2, len(host_names)))
        self._partial_count = 0
        self.sums = np.zeros((2, len(host_names)))
        self.samples = 0

    def add(self, cpu: np.ndarray, nic_tx: np.ndarray) -> None:
        self.sums[0] += cpu
        self.sums[1] += nic_tx
        self.samples += 1
        self._partial[0] += cpu
        self._partial[1] += nic_tx
        self._partial_count += 1
        if self._partial_count < self.samples_per_row:
            return
        if self.full_rows == self.blocks.shape[1]:
            half = self.full_rows // 2
            self.blocks[:, :half] = 0.5 * (self.blocks[:, 0 : 2 * half : 2] + self.blocks[:, 1 : 2 * half : 2])
            self.full_rows = half
            self.samples_per_row *= 2
            if self._partial_count < self.samples_per_row:
                return
        self.blocks[:, self.full_rows] = self._partial / self._partial_count
        self.full_rows += 1
        self._partial[:] = 0.0
        self._partial_count = 0

    def extremes(self, metric: int, count: int = EXTREME_HOSTS) -> tuple[list[int], list[int]]:
        """Indices of the `count` hosts with the highest and with the lowest mean of a metric (0 CPU, 1 NIC tx)."""
        order = np.argsort(-self.sums[metric], kind="stable")
        count = min(count, len(order) // 2)
        return list(order[:count]), list(order[::-1][:count])

    def per_sample(self, metric: int, host: int) -> np.ndarray:
        """One host's values at every sample: each sample gets the mean of the block it fell in."""
        rows = list(self.blocks[metric, : self.full_rows, host].astype(float))
        if self._partial_count:
            rows.append(self._partial[metric, host] / self._partial_count)
        return np.repeat(rows, self.samples_per_row)[: self.samples]


@dataclass
class Recorder:
    host_names: list[str]
    per_host: bool
    sample_every: float = 0.0
    vm_names: list[str] | None = None  # set to also record per-VM columns
    rows: dict[str, list] = field(default_factory=dict)
    svc: dict[str, list] = field(default_factory=dict)
    batch: list[BatchDone] = field(default_factory=list)
    transfers: list[TransferDone] = field(default_factory=list)
    jobs: list[JobDone] = field(default_factory=list)
    history: HostHistory | None = None  # without per-host columns: to name the hottest and coolest hosts
    _next: float = 0.0

    def __post_init__(self) -> None:
        if not self.per_host:
            self.history = HostHistory(self.host_names)

    def record(self, sim) -> None:
        g = sim.sensors.gauges
        self.batch += sim.events.take(BatchDone)
        self.transfers += sim.events.take(TransferDone)
        self.jobs += sim.events.take(JobDone)
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
            "dom0_util_mean": float((g["dom0_alloc"] / sim.compute.dom0_vcpus).mean()),
            "link_util_max": float(g["link_util"].max()) if len(g["link_util"]) else 0.0,
            "nic_tx_util_max": float(g["nic_tx_util"].max()),
            "nic_rx_util_max": float(g["nic_rx_util"].max()),
            "power_w": float(g["power"].sum()),
            "migrations_active": len(sim.migrations.under_way),
            "vfs_in_use": int(sim.vfs.used.sum()),
        }
        if svc is not None and len(svc["served"]):
            served = svc["served"].sum()
            row["requests_per_s"] = float(served / sim.fabric_dt)
            row["response_time_mean"] = float((svc["mean"] * svc["served"]).sum() / served) if served else float("nan")
            row["requests_dropped"] = float(svc["dropped"].sum())
        if "web_rps" in g:
            row["web_requests_per_s"] = float(g["web_rps"].sum())
        if self.per_host:
            for h, name in enumerate(self.host_names):
                row[f"cpu:{name}"] = float(util[h])
                row[f"nic_tx:{name}"] = float(g["nic_tx_util"][h])
        else:
            for prefix, values in (("cpu", util), ("nic_tx", g["nic_tx_util"])):
                for q, v in zip(HOST_PERCENTILES, percentiles(values, HOST_PERCENTILES), strict=True):
                    row[f"{prefix}_p{q}"] = float(v)
            self.history.add(util, g["nic_tx_util"])
        if self.vm_names is not None:
            src, dst = sim.network.flow_vm_ends()
            rate = np.where(np.isfinite(g["rate"]), g["rate"], 0.0)
            net = np.bincount(src[src >= 0], weights=rate[src >= 0], minlength=len(self.vm_names))
            net += np.bincount(dst[dst >= 0], weights=rate[dst >= 0], minlength=len(self.vm_names))
            for v, name in enumerate(self.vm_names):
                row[f"vm_cpu:{name}"] = float(g["vm_alloc"][v])
                row[f"vm_net:{name}"] = float(net[v])
                row[f"vm_host:{name}"] = self.host_names[int(sim.vms.host[v])]
        for k, v in row.items():
            self.rows.setdefault(k, []).append(v)

    def series(self) -> dict[str, np.ndarray]:
        out = {k: np.asarray(v) for k, v in self.rows.items()}
        if self.history is not None and self.history.samples:
            for metric, prefix in enumerate(("cpu", "nic_tx")):
                hottest, coolest = self.history.extremes(metric)
                for role, hosts in (("hottest", hottest), ("coolest", coolest)):
                    for h in hosts:
                        out[f"{prefix}_{role}:{self.host_names[h]}"] = self.history.per_sample(metric, h)
        return out

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


def percentiles(values: np.ndarray, qs: tuple[int, ...]) -> np.ndarray:
    """np.percentile's default (linear) method for a few percentiles of one small array, without its
    per-call overhead: the recorder asks for them every step."""
    ranked = np.sort(values)
    position = np.asarray(qs, dtype=float) / 100 * (len(ranked) - 1)
    below = np.floor(position).astype(np.int64)
    above = np.minimum(below + 1, len(ranked) - 1)
    return ranked[below] + (position - below) * (ranked[above] - ranked[below])


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
