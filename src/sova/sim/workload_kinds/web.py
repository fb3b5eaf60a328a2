"""Multi-tier web services (Virtue's client + web + memcached workload) as coupled flows.

A client VM keeps ``concurrency`` requests outstanding against the web VMs its ``web`` pattern names.
Each request sends ``request`` bytes to a web VM, which makes ``calls`` sequential requests to cache
VMs picked at random (each of the M cache VMs gets calls/M of them on average) and answers with
``page`` bytes. A stream (client, web VM) holds its client's share of ``concurrency`` connections, and
each of its flows carries the stream's rate times its bytes per request (the entries T: flow, stream,
bits per request); a flow shared by several streams (a web VM's calls to one cache VM) carries the sum
of theirs. How the stages of a request share the network, per TCP connection, is sim/web_sharing.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sova.model.name_match import NameMatcher
from sova.model.scenario import peer_name
from sova.sim.datapath import VM
from sova.sim.web_sharing import closed_loop
from sova.sim.workload_kinds.base import Demand, Granted, Group, WorkloadKind, register_kind

CLIENT_CPU_PER_REQUEST = 20e-6  # the load generator's own CPU per request, as for httperf


@register_kind
class Web(WorkloadKind):
    """Its streams share the network as units (sim/network.py solves them through T); it comes last in
    the step, as what a web VM's CPU can serve depends on what the VM's other work asks."""

    name = "web"
    order = 90

    def register(self, group, sim) -> None:
        group.model = register(group, sim.vm_names, lambda a, b, kind: sim.network.add_flow((VM, a), (VM, b), kind))
        n_streams = len(group.model)
        sim.network.web_rate, sim.network.web_transfer = np.zeros(n_streams), np.zeros(n_streams)
        sim.network.web_sending = group.model.tie_connections.copy()

    def demand(self, group, sim, step: Demand) -> None:
        """What each stream's CPUs allow (requests/s), stopped while any VM it crosses is paused, and the
        time of its request outside transfer, for the network's solve; its flows' demand at the rate its
        closed loop reaches with the last step's transfer times."""
        streams = group.model
        share = np.ones(sim.n_vms)
        if sim.last_vm_alloc is not None:
            want = np.maximum(sim.last_vm_want, 1e-300)
            share = np.where(sim.last_vm_want > 0, np.minimum(sim.last_vm_alloc / want, 1.0), 1.0)
        room = np.maximum(sim.compute.vm_cpu_limit() - step.cpu, 0.0) * share
        net = sim.network
        cap, base = stream_limits(group, streams, net.flow_latency, room, net.web_rate)
        stop = np.ones(len(streams))
        np.minimum.at(stop, streams.tie_stream, step.ends_run[streams.tie_flow])
        net.stream_demand, net.stream_base = cap * stop, base
        step.cpu += cpu_demand(group, streams, net.web_rate, sim.n_vms)
        wanted = np.minimum(net.stream_demand, closed_loop(streams, base, net.web_transfer))
        carried = wanted[streams.tie_stream] * streams.tie_bits
        np.add.at(step.flow, streams.tie_flow, carried)

    def advance(self, group, sim, step: Granted) -> None:
        sim.sensors.gauges["web_rps"] = np.bincount(group.model.row, weights=sim.network.web_rate, minlength=len(group))


@dataclass
class WebStreams:
    """The streams of every web workload row, and the entries of the tie matrix T."""

    row: np.ndarray  # workload row (client) of each stream
    client: np.ndarray  # client VM of each stream
    web: np.ndarray  # web VM of each stream
    tie_flow: np.ndarray  # T entries: flow, stream, bits per request
    tie_stream: np.ndarray
    tie_bits: np.ndarray
    tie_per_request: np.ndarray  # messages on this flow per request (1, or calls / M), for latency
    tie_connections: np.ndarray  # the stream's connections on this flow (its own, or the ones calling M)
    call_entry: np.ndarray  # the entry is a web -> cache call; its cache VM
    call_vm: np.ndarray
    connections: np.ndarray  # per stream: requests it keeps outstanding (its client's, shared evenly)

    def __len__(self) -> int:
        return len(self.row)


def register(g: Group, vm_names: list[str], add_flow: Callable[[int, int, str], int]) -> WebStreams:
    """Create the flows of every web workload row (shared where two streams use the same VM pair)."""
    index = {n: i for i, n in enumerate(vm_names)}
    matching = NameMatcher(vm_names)
    flows: dict[tuple[int, int, str], int] = {}

    def flow(a: int, b: int, kind: str) -> int:
        if (a, b, kind) not in flows:
            flows[(a, b, kind)] = add_flow(a, b, kind)
        return flows[(a, b, kind)]

    row, client, web = [], [], []
    tf, ts, tb, tm, call_vm, part = [], [], [], [], [], []
    p = g.params
    for j, c in enumerate(g.vm):
        c = int(c)
        webs = [index[n] for n in matching(peer_name(p["web"][j], vm_names[c]))]
        caches = [index[n] for n in matching(p["cache"][j])] if p["cache"][j] else []
        calls = p["calls"][j] if caches else 0.0
        for w in webs:
            s = len(row)
            row.append(j)
            client.append(c)
            web.append(w)
            entries = [
                (flow(c, w, "web-request"), p["request"][j] * 8, 1.0, -1),
                (flow(w, c, "web-response"), p["page"][j] * 8, 1.0, -1),
            ]
            for m in caches:
                share = calls / len(caches)
                entries.append((flow(w, m, "cache-request"), share * p["call_request"][j] * 8, share, m))
                entries.append((flow(m, w, "cache-response"), share * p["call_response"][j] * 8, share, -1))
            for k, (f, bits, per, m) in enumerate(entries):
                tf.append(f)
                ts.append(s)
                tb.append(bits)
                tm.append(per)
                call_vm.append(m)
                part.append(1.0 if k < 2 else 1.0 / len(caches))  # calls spread over the M cache VMs
    call = np.array(call_vm, dtype=np.int64)
    row_a, stream, bits = np.array(row, dtype=np.int64), np.array(ts, dtype=np.int64), np.array(tb, dtype=float)
    connections = p["concurrency"][row_a] / np.bincount(row_a, minlength=len(g))[row_a]
    return WebStreams(
        row=row_a,
        client=np.array(client, dtype=np.int64),
        web=np.array(web, dtype=np.int64),
        tie_flow=np.array(tf, dtype=np.int64),
        tie_stream=stream,
        tie_bits=bits,
        tie_per_request=np.array(tm, dtype=float),
        call_entry=call >= 0,
        call_vm=call,
        tie_connections=connections[stream] * np.array(part, dtype=float),
        connections=connections,
    )


def stream_limits(
    g: Group, st: WebStreams, flow_latency: np.ndarray, cpu_room: np.ndarray, last_rate: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per stream, the requests/s its CPUs allow (the web VM's, or a cache VM's it calls) and the time of
    one request outside transfer (server and cache CPU, and the fixed latency of every message).

    A web VM serves at most ``cpu_room`` / cpu_per_request requests/s, and a cache VM ``cpu_room`` /
    cpu_per_call calls/s, each shared by the streams it serves in proportion to what they carried last
    step (evenly at first); a stream sends calls / M of its requests' calls to each of its M cache VMs,
    so a busy cache VM holds back every stream that calls it.
    """
    p = g.params
    latency = np.bincount(st.tie_stream, weights=st.tie_per_request * flow_latency[st.tie_flow], minlength=len(st))
    cpr = p["cpu_per_request"][st.row]
    base = cpr + p["calls"][st.row] * p["cpu_per_call"][st.row] + latency
    cpu = np.where(cpr > 0, cpu_room[st.web] * _served_part(st.web, last_rate) / np.maximum(cpr, 1e-300), np.inf)
    # the cache VMs: one entry per (stream, cache VM), calls per request = tie_per_request
    c = np.flatnonzero(st.call_entry)
    stream, cache, per = st.tie_stream[c], st.call_vm[c], st.tie_per_request[c]
    cpc = p["cpu_per_call"][st.row[stream]]
    part = _served_part(cache, last_rate[stream] * per)
    calls = np.where(cpc > 0, cpu_room[cache] * part / np.maximum(cpc, 1e-300), np.inf)
    np.minimum.at(cpu, stream, calls / np.maximum(per, 1e-300))
    return cpu, base


def _served_part(server: np.ndarray, load: np.ndarray) -> np.ndarray:
    """Each entry's share of its server's CPU: its part of what the server's entries carried last step,
    or an even share when they carried nothing."""
    total = np.bincount(server, weights=load)
    count = np.bincount(server).astype(float)
    return np.where(total[server] > 0, load / np.maximum(total[server], 1e-300), 1.0 / count[server])


def cpu_demand(g: Group, st: WebStreams, rate: np.ndarray, n_vms: int) -> np.ndarray:
    """Cores each VM spends on the web streams at `rate` (requests/s): server, cache and client."""
    p = g.params
    out = np.bincount(st.web, weights=rate * p["cpu_per_request"][st.row], minlength=n_vms)
    out += np.bincount(st.client, weights=rate * CLIENT_CPU_PER_REQUEST, minlength=n_vms)
    c = st.call_entry
    calls = rate[st.tie_stream[c]] * st.tie_per_request[c] * p["cpu_per_call"][st.row[st.tie_stream[c]]]
    out += np.bincount(st.call_vm[c], weights=calls, minlength=n_vms)
    return out
