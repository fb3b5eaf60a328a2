"""How work advances in a step, given the CPU and network each VM got: batch work, MapReduce jobs,
file transfers and web services (their response times from queueing at every resource they cross).

A part of ``Simulator`` (sim/engine.py), which holds the state these methods work on.
"""

from __future__ import annotations

import numpy as np

from sova.sim import mapreduce
from sova.sim.events import BatchDone, JobDone, TransferDone

RHO_MAX = 0.99  # utilisation cap in the queueing formulas (a saturated resource serves at 1 / (1 - 0.99))


class WorkProgress:
    """The progress part of the simulator: batch work, jobs, transfers and web services per step."""

    def _advance_batch(self, vm_alloc, vm_dem, stretch, dt, run) -> None:
        g = self.workloads.group("batch")
        if g is None:
            return
        cores = np.minimum(np.where(g.params["cores"] > 0, g.params["cores"], self.vm_vcpus[g.vm]), self.vm_vcpus[g.vm])
        share = np.where(vm_dem[g.vm] > 0, vm_alloc[g.vm] / np.maximum(vm_dem[g.vm], 1e-300), 0.0)
        thinking = g.state["think_left"] > 0
        progress = np.where(
            thinking, 0.0, cores * np.minimum(share, 1.0) / stretch[self.vm_host[g.vm]] * dt * run[g.vm]
        )
        g.state["think_left"] = np.maximum(g.state["think_left"] - dt, 0.0)
        g.state["left"] -= progress
        done = (g.state["left"] <= 0) & ~thinking
        if done.any():
            # finishing time inside the step, by linear interpolation
            over = -g.state["left"][done] / np.maximum(progress[done], 1e-300) * dt
            finish = self.t + dt - over
            for i, f in zip(np.flatnonzero(done), finish, strict=True):
                self.events.add(BatchDone(int(i), float(f - g.state["started"][i])))
            g.state["started"][done] = finish + g.params["think"][done]
            g.state["left"][done] = g.params["work"][done]
            g.state["think_left"][done] = g.params["think"][done]

    def _advance_jobs(self, vm_alloc, vm_want, stretch, rate, dt, run) -> None:
        g = self.workloads.group("mapreduce")
        if g is None:
            return
        share = np.where(vm_want[g.vm] > 0, vm_alloc[g.vm] / np.maximum(vm_want[g.vm], 1e-300), 0.0)
        speed = mapreduce.cores(g, self.vm_vcpus) * np.minimum(share, 1.0) / stretch[self.vm_host[g.vm]] * run[g.vm]
        done = mapreduce.advance(g, self.jobs, speed, rate[self.jobs.flow], self.t, dt)
        for job, started, finished in done:
            self.events.add(JobDone(job, started, finished))

    def _advance_transfers(self, rate: np.ndarray, dt: float) -> None:
        g = self.workloads.group("transfer")
        if g is None:
            return
        flows = g.flows["main"]
        moved = rate[flows] * dt / 8
        before = g.state["sent"].copy()
        g.state["sent"] = np.minimum(before + moved, g.params["size"])
        finished = ~g.state["done"] & (g.state["sent"] >= g.params["size"] * (1 - 1e-12))
        for i in np.flatnonzero(finished):
            frac = (g.params["size"][i] - before[i]) / max(moved[i], 1e-300)  # of the step, to the last byte
            rate[flows[i]] *= frac  # the copy stops at its last byte: nothing is counted after it
            self.events.add(TransferDone(int(i), float(self.t + frac * dt - g.params["start"][i])))
        g.state["done"] |= finished

    def _advance_services(self, rate, load, cap, vm_alloc, vm_dem, stretch, dt, run) -> None:
        g = self.workloads.group("httperf")
        if g is None:
            return
        lam, page, cpr = g.params["rate"], g.params["page"], g.params["cpu_per_request"]
        bits = page * 8
        backlog = g.state["backlog"]
        resp = g.flows["response"]
        # capacity: network (what the response flow carried) and server CPU
        offered = lam + backlog / 1.0
        mu_net = np.where(offered > 0, rate[resp] / np.maximum(bits, 1e-300), np.inf)
        mu_net = np.where(rate[resp] >= (offered * bits) * (1 - 1e-9), np.inf, mu_net)
        vm = g.vm
        cpu_short = vm_dem[vm] > vm_alloc[vm] * (1 + 1e-9)
        share = np.where(cpu_short, vm_alloc[vm] / np.maximum(vm_dem[vm], 1e-300), 1.0)
        mu_cpu = np.where(cpr > 0, share * offered, np.inf)
        mu_cpu = np.where(cpu_short, mu_cpu, np.inf)
        mu = np.minimum(mu_net, mu_cpu) * run[vm]
        arrivals = lam * dt
        want = backlog + arrivals
        served = np.minimum(want, mu * dt)
        left = want - served
        limit = np.where(np.isfinite(mu), mu * g.params["timeout"], np.inf)
        dropped = np.maximum(left - limit, 0.0)
        new_backlog = left - dropped
        # time per request: server CPU (PS), transfer (bottleneck stage, PS), fixed latencies, queue
        rho_v = np.minimum(np.where(cpu_short, 1.0, vm_dem[vm] / self.vm_vcpus[vm]), RHO_MAX)
        t_cpu = cpr * stretch[self.vm_host[vm]] / (1 - rho_v)
        t_xfer, t_min = self._transfer_times(resp, bits, load, cap)
        fixed = self.flow_latency[resp] + self.flow_latency[g.flows["request"]]
        queue = np.where(np.isfinite(mu) & (mu > 0), backlog / np.maximum(mu, 1e-300), 0.0)
        mean = t_cpu + t_xfer + fixed + queue
        floor = cpr + t_min + fixed
        g.state["backlog"] = new_backlog
        self.gauges["svc"] = {
            "served": served,
            "arrivals": arrivals,
            "dropped": dropped,
            "mean": mean,
            "floor": floor,
        }

    def _transfer_times(self, flows, bits, load, cap) -> tuple[np.ndarray, np.ndarray]:
        """Per flow, the slowest pipeline stage for one message of `bits`, loaded and unloaded (M/G/1-PS)."""
        ptr = self._ft.indptr
        starts, ends = ptr[flows], ptr[flows + 1]
        counts = ends - starts
        idx = np.arange(counts.sum()) + np.repeat(starts - (np.cumsum(counts) - counts), counts)
        owner = np.repeat(np.arange(len(flows)), counts)
        res = self._entry_res[idx]
        rho = np.minimum(load[res] / np.maximum(cap[res], 1e-300), RHO_MAX)
        rho = np.where(np.isfinite(cap[res]), rho, 0.0)
        is_cpu = self._entry_dom0[idx] >= 0
        per_cross = self._ft.data[idx] / self._entry_cross[idx]
        speed = np.where(is_cpu, 1.0, cap[res])
        work = np.where(is_cpu, per_cross * bits[owner], bits[owner])
        # rate limiters (VF tiers, vNIC limits) are token buckets: a message within the bucket's burst
        # leaves at line rate; the bucket holds less as the limiter fills up
        limiter = res >= self.layout.vf
        burst = self.params["rate_limit_burst"] * 8 * (1 - rho)
        work = np.where(limiter, np.maximum(work - burst, 0.0), work)
        base = np.where(np.isfinite(speed), work / np.maximum(speed, 1e-300), 0.0)
        loaded = base / (1 - rho)
        t_load = np.zeros(len(flows))
        t_min = np.zeros(len(flows))
        np.maximum.at(t_load, owner, loaded)
        np.maximum.at(t_min, owner, base)
        return t_load, t_min
