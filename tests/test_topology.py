"""Fabrics: sizes, capacities with oversubscription, and ECMP paths."""

from collections import Counter
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from sova.model.scenario import StorageSpec, TopologySpec
from sova.model.topology import build_topology, fabric_size, host_ports


def hosts(n):
    return [f"h{i}" for i in range(n)]


def is_connected_path(t, path, src, dst):
    if not len(path):
        return src == dst
    nodes = [int(t.link_src[path[0]])] + [int(t.link_dst[p]) for p in path]
    chain = all(t.link_dst[a] == t.link_src[b] for a, b in pairwise(path))
    return chain and nodes[0] == src and nodes[-1] == dst


def test_fat_tree_has_the_textbook_shape():
    t = build_topology(TopologySpec(kind="fat-tree", k=4), hosts(16))
    switches = [n for n in t.node_names if "core" in n or "agg" in n or "edge" in n]
    assert len(switches) == 20  # (k/2)^2 core + k*k/2 agg + k*k/2 edge
    assert len(t.path(0, 1)) == 2  # same edge switch
    assert len(t.path(0, 2)) == 4  # same pod
    assert len(t.path(0, 15)) == 6  # across pods


def test_ecmp_spreads_flows_over_all_core_paths():
    t = build_topology(TopologySpec(kind="fat-tree", k=4), hosts(16))
    paths = Counter(tuple(t.path(0, 15, h)) for h in range(400))
    assert len(paths) == 4  # (k/2)^2 equal-cost paths between pods
    assert min(paths.values()) > 60


@pytest.mark.parametrize("kind", ["single-switch", "leaf-spine", "fat-tree", "three-tier"])
def test_every_pair_has_a_connected_shortest_path(kind):
    spec = TopologySpec(kind=kind, k=4, leaves=2, hosts_per_leaf=4, racks=2, hosts_per_rack=4, racks_per_agg=1)
    t = build_topology(spec, hosts(8))
    rng = np.random.default_rng(0)
    for _ in range(40):
        a, b = (int(x) for x in rng.integers(0, 8, 2))
        p = t.path(a, b, int(rng.integers(1000)))
        assert is_connected_path(t, p, a, b)
    assert is_connected_path(t, t.path(0, t.external), 0, t.external)


def test_three_tier_oversubscription_sets_uplink_capacity():
    spec = TopologySpec(
        kind="three-tier",
        racks=4,
        hosts_per_rack=20,
        racks_per_agg=2,
        link_speed=100e6,
        tor_oversubscription=4,
        agg_oversubscription=4,
    )
    t = build_topology(spec, hosts(80))
    tor_agg = t.link_cap[t.tiers["tor-agg"]]
    agg_core = t.link_cap[t.tiers["agg-core"]]
    assert tor_agg == pytest.approx(np.full(len(tor_agg), 20 * 100e6 / 4))
    assert agg_core == pytest.approx(np.full(len(agg_core), 2 * 20 * 100e6 / 4 / 4))


def test_leaf_spine_uplink_speed_is_separate():
    t = build_topology(
        TopologySpec(kind="leaf-spine", leaves=2, spines=2, hosts_per_leaf=2, uplink_speed=40e9), hosts(4)
    )
    assert set(t.link_cap[t.tiers["leaf-spine"]]) == {40e9}
    assert set(t.link_cap[t.tiers["host"]]) == {10e9}


@given(
    kind=st.sampled_from(["single-switch", "leaf-spine", "fat-tree", "three-tier"]),
    n_hosts=st.integers(1, 40),
    storage=st.integers(0, 2),
    k=st.sampled_from([2, 4, 6]),
    hosts_per_edge=st.integers(0, 4),
    leaves=st.integers(1, 6),
    spines=st.integers(1, 4),
    hosts_per_leaf=st.integers(1, 8),
    racks=st.integers(1, 6),
    hosts_per_rack=st.integers(1, 8),
    racks_per_agg=st.integers(1, 3),
)
def test_the_fabric_is_counted_before_it_is_built_exactly_as_it_is_built(kind, n_hosts, storage, **sizes):
    spec = TopologySpec(kind=kind, **sizes)
    assume(n_hosts <= host_ports(spec, n_hosts))
    fabric = build_topology(spec, hosts(n_hosts), tuple(StorageSpec(f"s{i}") for i in range(storage)))
    assert fabric_size(spec, n_hosts, storage) == (len(fabric.node_names), fabric.n_links)
