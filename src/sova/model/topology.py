"""Data-center fabrics as directed link graphs, with ECMP routing.

Nodes are numbered hosts first (node i is host i), then switches, then storage servers, then one
``external`` node standing for the world outside the data center. Every cable is two directed links.
Routing is per-flow ECMP: among the shortest paths, each hop picks a next hop by a hash of the flow,
as switches do. Paths are computed once per (source, destination, hash) and cached, and each node's next
hops towards a destination once per pair (a flow's walk is then dictionary look-ups).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from sova.model.scenario import StorageSpec, TopologySpec


@dataclass
class Topology:
    """A fabric: node names, directed links (src, dst, capacity in bit/s) and a routing cache."""

    node_names: list[str]
    link_src: np.ndarray
    link_dst: np.ndarray
    link_cap: np.ndarray
    n_hosts: int
    latency_per_hop: float = 2e-6
    tiers: dict[str, list[int]] = field(default_factory=dict)
    _dist: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    _paths: dict[tuple[int, int, int], np.ndarray] = field(default_factory=dict, repr=False)
    _hops: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        n = len(self.node_names)
        self.index = {name: i for i, name in enumerate(self.node_names)}
        order = np.lexsort((self.link_dst, self.link_src))
        self._adj_ptr = np.searchsorted(self.link_src[order], np.arange(n + 1))
        self._adj_link = order
        self.link_of = {(int(s), int(d)): i for i, (s, d) in enumerate(zip(self.link_src, self.link_dst, strict=True))}
        self._link_ends = self.link_dst.tolist()

    @property
    def n_links(self) -> int:
        return len(self.link_cap)

    @property
    def external(self) -> int:
        return self.index["external"]

    def _distances_to(self, dst: int) -> np.ndarray:
        d = self._dist.get(dst)
        if d is None:
            d = shortest_path(self._reversed, unweighted=True, indices=dst)
            self._dist[dst] = d
        return d

    @functools.cached_property
    def _reversed(self) -> csr_matrix:
        """The link graph with every link turned round: distances from it to a node are distances to it."""
        n = len(self.node_names)
        return csr_matrix((np.ones(self.n_links), (self.link_dst, self.link_src)), shape=(n, n))

    def path(self, src: int, dst: int, flow_hash: int = 0) -> np.ndarray:
        """Directed link indices from node src to node dst, chosen by ECMP with the flow's hash."""
        key = (src, dst, flow_hash)
        p = self._paths.get(key)
        if p is not None:
            return p
        links: list[int] = []
        if src != dst:
            if not np.isfinite(self._distances_to(dst)[src]):
                raise ValueError(f"no route from {self.node_names[src]} to {self.node_names[dst]}")
            u, hop = src, 0
            while u != dst:
                nxt = self._next_hops(u, dst)
                choice = nxt[_mix(flow_hash, hop) % len(nxt)]
                links.append(choice)
                u = self._link_ends[choice]
                hop += 1
        p = np.asarray(links, dtype=np.int64)
        self._paths[key] = p
        return p

    def _next_hops(self, node: int, dst: int) -> tuple[int, ...]:
        """The links out of `node` that lie on a shortest path to `dst`."""
        hops = self._hops.get((node, dst))
        if hops is None:
            dist = self._distances_to(dst)
            out = self._adj_link[self._adj_ptr[node] : self._adj_ptr[node + 1]]
            hops = tuple(out[dist[self.link_dst[out]] == dist[node] - 1].tolist())
            self._hops[(node, dst)] = hops
        return hops

    def latency(self, src: int, dst: int) -> float:
        """One-way propagation + switching latency between two nodes."""
        if src == dst:
            return 0.0
        return float(self._distances_to(dst)[src]) * self.latency_per_hop


def _mix(h: int, hop: int) -> int:
    """A cheap integer hash so that each hop's ECMP choice is independent."""
    x = (h * 0x9E3779B1 + hop * 0x85EBCA77 + 0x165667B1) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & 0xFFFFFFFF
    x ^= x >> 12
    return x


class _Builder:
    def __init__(self, host_names: list[str]):
        self.names = list(host_names)
        self.src: list[int] = []
        self.dst: list[int] = []
        self.cap: list[float] = []
        self.tiers: dict[str, list[int]] = {}

    def node(self, name: str) -> int:
        self.names.append(name)
        return len(self.names) - 1

    def cable(self, a: int, b: int, cap: float, tier: str) -> None:
        for s, d in ((a, b), (b, a)):
            self.tiers.setdefault(tier, []).append(len(self.src))
            self.src.append(s)
            self.dst.append(d)
            self.cap.append(cap)

    def done(self, n_hosts: int, latency: float) -> Topology:
        return Topology(
            node_names=self.names,
            link_src=np.asarray(self.src, dtype=np.int64),
            link_dst=np.asarray(self.dst, dtype=np.int64),
            link_cap=np.asarray(self.cap, dtype=float),
            n_hosts=n_hosts,
            latency_per_hop=latency,
            tiers=self.tiers,
        )


def host_ports(spec: TopologySpec, n_hosts: int) -> int:
    """How many hosts the fabric has ports for (a single switch: as many as there are)."""
    return {
        "leaf-spine": spec.leaves * spec.hosts_per_leaf,
        "fat-tree": spec.k * (spec.k // 2) * (spec.hosts_per_edge or spec.k // 2),
        "three-tier": spec.racks * spec.hosts_per_rack,
    }.get(spec.kind, n_hosts)


def fabric_size(spec: TopologySpec, n_hosts: int, n_storage: int = 0) -> tuple[int, int]:
    """(nodes, directed links) ``build_topology`` would make, counted without building anything: a fabric
    far larger than its hosts need is refused or warned of before it takes minutes and gigabytes."""
    if spec.kind == "leaf-spine":
        switches, cables, top = spec.leaves + spec.spines, spec.leaves * spec.spines, spec.spines
    elif spec.kind == "fat-tree":
        half = spec.k // 2
        switches, cables, top = half * half + spec.k * 2 * half, 2 * spec.k * half * half, half * half
    elif spec.kind == "three-tier":
        aggs = -(-spec.racks // spec.racks_per_agg)
        switches, cables, top = 1 + aggs + spec.racks, spec.racks + aggs, 1
    else:
        switches, cables, top = 1, 0, 1
    gateway = 1 if top > 1 else 0
    nodes = n_hosts + switches + gateway + n_storage + 1  # the last: external
    cables += min(n_hosts, host_ports(spec, n_hosts)) + gateway * top + n_storage + 1
    return nodes, 2 * cables


def build_topology(spec: TopologySpec, host_names: list[str], storage: tuple[StorageSpec, ...] = ()) -> Topology:
    """Build the fabric a scenario describes; hosts fill the ports in order."""
    b = _Builder(host_names)
    n = len(host_names)
    speed = spec.link_speed
    up = spec.uplink_speed or speed
    if spec.kind == "single-switch":
        sw = b.node("switch")
        for h in range(n):
            b.cable(h, sw, speed, "host")
        top = [sw]
    elif spec.kind == "leaf-spine":
        leaves = [b.node(f"leaf{i + 1}") for i in range(spec.leaves)]
        spines = [b.node(f"spine{i + 1}") for i in range(spec.spines)]
        for h in range(n):
            b.cable(h, leaves[h // spec.hosts_per_leaf], speed, "host")
        for leaf in leaves:
            for sp in spines:
                b.cable(leaf, sp, up, "leaf-spine")
        top = spines
    elif spec.kind == "fat-tree":
        k = spec.k
        half = k // 2
        per_edge = spec.hosts_per_edge or half
        cores = [b.node(f"core{i + 1}") for i in range(half * half)]
        for p in range(k):
            aggs = [b.node(f"pod{p + 1}-agg{i + 1}") for i in range(half)]
            edges = [b.node(f"pod{p + 1}-edge{i + 1}") for i in range(half)]
            for e, edge in enumerate(edges):
                first = (p * half + e) * per_edge
                for h in range(first, min(first + per_edge, n)):
                    b.cable(h, edge, speed, "host")
                for agg in aggs:
                    b.cable(edge, agg, up, "edge-agg")
            for a, agg in enumerate(aggs):
                for c in range(half):
                    b.cable(agg, cores[a * half + c], up, "agg-core")
        top = cores
    elif spec.kind == "three-tier":
        core = b.node("core")
        n_aggs = -(-spec.racks // spec.racks_per_agg)
        aggs = [b.node(f"agg{i + 1}") for i in range(n_aggs)]
        tor_up = spec.hosts_per_rack * speed / spec.tor_oversubscription
        for r in range(spec.racks):
            tor = b.node(f"tor{r + 1}")
            for h in range(r * spec.hosts_per_rack, min((r + 1) * spec.hosts_per_rack, n)):
                b.cable(h, tor, speed, "host")
            b.cable(tor, aggs[r // spec.racks_per_agg], tor_up, "tor-agg")
        for a, agg in enumerate(aggs):
            racks_here = min(spec.racks_per_agg, spec.racks - a * spec.racks_per_agg)
            b.cable(agg, core, racks_here * tor_up / spec.agg_oversubscription, "agg-core")
        top = [core]
    else:
        raise ValueError(f"unknown topology kind {spec.kind!r}")
    gw = b.node("gateway") if len(top) > 1 else top[0]
    if len(top) > 1:
        for t in top:
            b.cable(t, gw, spec.external_speed, "gateway")
    for s in storage:
        node = b.node(f"storage:{s.name}")
        b.cable(node, gw, s.link_speed, "storage")
    ext = b.node("external")
    b.cable(ext, gw, spec.external_speed, "external")
    return b.done(n, spec.latency_per_hop)
