"""How web request streams share the network: per TCP connection, a request's stages taken in turn.

A web request of Virtue's workload is a chain: the client's request, ``calls`` sequential cache calls,
then the page back (the paper: the web VM "make[s] 10 sequential Memcached-like requests ... then
return[s] a response"). Each stage is a message on one of the stream's flows, and TCP shares a link per
connection, in bits/s, whichever request the bytes belong to. So each flow is its own unit of max-min
sharing, weighted by its connections that are sending, and a message takes its bits over what one
sending connection of its flow gets: the water level at the flow's bottleneck when every web flow is
backlogged (its share over those connections), and at most what its path carries alone. By Little's law a stage holds the stream's rate times the stage's time of its requests,
so a flow of small messages (cache calls) has few connections sending and takes little of a link; the
counts come from the last solve, as TCP's shares follow the traffic of the moment before. A
stream's rate is its closed loop (its outstanding requests over the time of one request, the stages
summed) or what the CPUs let it serve, whichever is lower. The network then carries those rates, the
other flows taking what the web flows leave; a stream whose flows get less than asked is cut to the
least they carry, and its flows carry its rate times their bits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Solve = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (demand, weight) per flow -> max-min rates


@dataclass(frozen=True)
class Shared:
    flow_rate: np.ndarray  # bit/s each flow carries
    stream_rate: np.ndarray  # requests/s each web stream carries
    transfer: np.ndarray  # s of one request's messages in transfer, per stream (latencies aside)
    sending: np.ndarray  # per T entry: the stream's connections sending on that flow (Little's law)


def share_per_connection(
    streams,
    solve: Solve,
    demand: np.ndarray,
    weight: np.ndarray | None,
    stream_cap: np.ndarray,
    stream_base: np.ndarray,
    sending: np.ndarray,
    alone: np.ndarray,
) -> Shared:
    """The flows' rates with the web streams' flows shared per connection (module docstring).

    streams: the WebStreams (sim/workload_kinds/web.py); demand, weight: per flow (a web flow's demand
    is replaced); stream_cap: requests/s each stream's CPUs allow (inf: none; 0: stopped); stream_base:
    s of one request outside transfer (CPU and every message's fixed latency); sending: per T entry, the
    last solve's (at first the stream's connections there); alone: per flow, its rate alone on its path."""
    n_flows = len(demand)

    def per_flow(per_entry: np.ndarray) -> np.ndarray:
        return np.bincount(streams.tie_flow, weights=per_entry, minlength=n_flows)

    floor = 1e-6 * streams.tie_connections  # a stage that carried nothing still sends when it can
    connections = per_flow(np.maximum(sending, floor))
    web = connections > 0
    bounded = web & np.isfinite(alone)  # a web flow that crosses a resource (not one between two vCPUs)
    flow_weight = np.ones(n_flows) if weight is None else np.asarray(weight, dtype=float).copy()
    flow_weight[web] *= connections[web]
    backlogged = np.where(bounded, np.inf, np.where(web, 0.0, demand))
    # a sending connection gets the water level at its flow's bottleneck, and at most its path alone
    level = np.divide(solve(backlogged, flow_weight), connections, out=np.full(n_flows, np.inf), where=bounded)
    per_connection = np.minimum(level, alone)[streams.tie_flow]
    with np.errstate(divide="ignore"):
        stage = np.where(per_connection > 0, streams.tie_bits / per_connection, np.inf)
    transfer = np.bincount(streams.tie_stream, weights=stage, minlength=len(streams))
    wanted = np.minimum(stream_cap, closed_loop(streams, stream_base, transfer))
    asked = per_flow(wanted[streams.tie_stream] * streams.tie_bits)
    rate = solve(np.where(web, asked, demand), flow_weight)
    carried = np.minimum(np.divide(rate, asked, out=np.ones(n_flows), where=asked > 0), 1.0)
    least = np.ones(len(streams))
    np.minimum.at(least, streams.tie_stream, carried[streams.tie_flow])
    got = wanted * least
    rate[web] = per_flow(got[streams.tie_stream] * streams.tie_bits)[web]
    held = np.where(np.isfinite(stage), wanted[streams.tie_stream] * stage, streams.tie_connections)
    return Shared(rate, got, transfer, np.minimum(held, streams.tie_connections))


def closed_loop(streams, base: np.ndarray, transfer: np.ndarray) -> np.ndarray:
    """Requests/s of each stream's closed loop: its outstanding requests over one request's time, outside
    transfer (`base`) and in it (0 where a stage cannot send)."""
    return np.where(np.isfinite(transfer), streams.connections / np.maximum(base + transfer, 1e-9), 0.0)
