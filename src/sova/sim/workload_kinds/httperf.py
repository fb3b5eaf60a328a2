"""httperf: requests at ``rate`` against a web server in the VM, each answered with a ``page``.

Requests the server cannot serve in a step wait (a backlog) and are dropped after ``timeout``. The mean
response time is the server's CPU time (processor sharing at its utilisation, after the wait of the
request's wake-up for a hardware thread on a busy host: ``wake_wait``), the slowest pipeline
stage of the response's path (M/G/1-PS at each resource it crosses), the paths' fixed latency with the
wait of Dom0's forwarding thread on the client's host when that host is busy (``dom0_wait``), and the wait
in the backlog.
"""

from __future__ import annotations

import numpy as np

from sova.sim.datapath import NODE, VM
from sova.sim.network import RHO_MAX
from sova.sim.workload_kinds.base import Demand, Granted, WorkloadKind, register_kind

CLIENT_CPU_PER_REQUEST = 20e-6  # the load generator's own CPU per request


@register_kind
class Httperf(WorkloadKind):
    name = "httperf"
    order = 30

    def prepare(self, group, specs, step) -> None:
        group.state["backlog"] = np.zeros(len(group))

    def register(self, group, sim) -> None:
        outside = (NODE, sim.topology.external)
        response, request = [], []
        for vm, client in zip(group.vm, group.params["client"], strict=True):
            source = (VM, int(client)) if client >= 0 else outside
            response.append(sim.network.add_flow((VM, int(vm)), source, "http-response"))
            request.append(sim.network.add_flow(source, (VM, int(vm)), "http-request"))
        group.flows["response"] = np.array(response, dtype=np.int64)
        group.flows["request"] = np.array(request, dtype=np.int64)

    def demand(self, group, sim, step: Demand) -> None:
        p = group.params
        offered = p["rate"] + group.state["backlog"] / 1.0
        step.flow[group.flows["response"]] = offered * p["page"] * 8
        step.flow[group.flows["request"]] = offered * p["request"] * 8
        np.add.at(step.cpu, group.vm, offered * p["cpu_per_request"])
        client = p["client"]
        has = client >= 0
        np.add.at(step.cpu, client[has].astype(np.int64), offered[has] * CLIENT_CPU_PER_REQUEST)

    def advance(self, group, sim, step: Granted) -> None:
        p, vm, dt, rate = group.params, group.vm, step.dt, step.rate
        lam, cpr = p["rate"], p["cpu_per_request"]
        bits = p["page"] * 8
        backlog = group.state["backlog"]
        resp = group.flows["response"]
        # capacity: network (what the response flow carried) and server CPU
        offered = lam + backlog / 1.0
        mu_net = np.where(offered > 0, rate[resp] / np.maximum(bits, 1e-300), np.inf)
        mu_net = np.where(rate[resp] >= (offered * bits) * (1 - 1e-9), np.inf, mu_net)
        vm_want, vm_alloc = step.vm_want, step.vm_alloc
        cpu_short = vm_want[vm] > vm_alloc[vm] * (1 + 1e-9)
        share = np.where(cpu_short, vm_alloc[vm] / np.maximum(vm_want[vm], 1e-300), 1.0)
        mu_cpu = np.where(cpr > 0, share * offered, np.inf)
        mu_cpu = np.where(cpu_short, mu_cpu, np.inf)
        mu = np.minimum(mu_net, mu_cpu) * step.run[vm]
        arrivals = lam * dt
        want = backlog + arrivals
        served = np.minimum(want, mu * dt)
        left = want - served
        limit = np.where(np.isfinite(mu), mu * p["timeout"], np.inf)
        dropped = np.maximum(left - limit, 0.0)
        # time per request: server CPU (PS), transfer (bottleneck stage, PS), fixed latencies, queue
        rho_v = np.minimum(np.where(cpu_short, 1.0, vm_want[vm] / sim.compute.vm_vcpus[vm]), RHO_MAX)
        t_cpu = cpr * step.stretch[sim.vms.host[vm]] / (1 - rho_v) + np.where(cpr > 0, step.wake_wait[vm], 0.0)
        t_xfer, t_min = sim.network.transfer_times(resp, bits, step.load, step.cap)
        req = group.flows["request"]
        fixed = sim.network.flow_latency[resp] + sim.network.flow_latency[req] + _dom0_wait(sim.network, req, cpr, step)
        queue = np.where(np.isfinite(mu) & (mu > 0), backlog / np.maximum(mu, 1e-300), 0.0)
        group.state["backlog"] = left - dropped
        sim.sensors.gauges["svc"] = {
            "served": served,
            "arrivals": arrivals,
            "dropped": dropped,
            "mean": t_cpu + t_xfer + fixed + queue,
            "floor": cpr + t_min + fixed,
        }


def _dom0_wait(net, req: np.ndarray, cpr: np.ndarray, step: Granted) -> np.ndarray:
    """Per request, the wait of the Dom0 forwarding threads it wakes on busy hosts (s): one wake-up wait
    per host whose Dom0 its request and response cross, as the lab's echo (docs/simulator.md) measured the
    wake-ups of one request through one host's para-virtual path. The server's host counts in its own
    ``wake_wait`` when the request wakes it (its CPU per request > 0), so it is left out here."""
    src_host, dst_host = net.flow_src_host[req], net.flow_dst_host[req]
    client = net.flow_src_pv[req] & (src_host != dst_host)
    server = net.flow_dst_pv[req] & (cpr <= 0)
    wait = np.where(client, step.dom0_wait[np.maximum(src_host, 0)], 0.0)
    return wait + np.where(server, step.dom0_wait[np.maximum(dst_host, 0)], 0.0)
