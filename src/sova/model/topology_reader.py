"""A ``[topology]`` table (a scenario's, or a hosts file's for real hosts), read and checked before any fabric
is built: its keys, that the hosts fit its ports, and its size, counted first so that a fabric of millions of
links is refused in a moment instead of taking minutes and gigabytes to build."""

from __future__ import annotations

from typing import Any

from sova.model.scenario import TopologySpec
from sova.model.scenario_fields import TOPOLOGY_FIELDS
from sova.model.schema import Reader
from sova.model.topology import fabric_size, host_ports

# building a fabric costs about 5 us and 285 bytes per directed link (fat-trees of k = 36 to 100 on this
# project's 2-core machine, 2026-11-26); two million links take some 10 s and 0.6 GiB
LINK_BUILD_SECONDS, LINK_BUILD_BYTES = 5.9e-6, 285
MAX_FABRIC_LINKS = 2_000_000


def read_topology(reader: Reader, raw: Any) -> TopologySpec:
    """The table's values, its problems noted on `r`."""
    return TopologySpec(**reader.table(raw, TOPOLOGY_FIELDS, "[topology]"))


def check_topology_fits(reader: Reader, t: TopologySpec, n_hosts: int) -> None:
    """The hosts fit the fabric's ports, and the fabric is not too large to build."""
    slots = host_ports(t, n_hosts)
    if n_hosts > slots:
        reader.error("[topology]", f"a {t.kind} with these sizes has {slots} host ports but there are {n_hosts} hosts")
    if t.kind == "fat-tree" and t.k % 2:
        reader.error("[topology].k", f"fat-tree radix k must be even, got {t.k}")
    nodes, links = fabric_size(t, n_hosts)
    if links > MAX_FABRIC_LINKS:
        reader.error(
            "[topology]",
            f"a {t.kind} with these sizes has {nodes:,} nodes and {links:,} links for {n_hosts:,} hosts "
            f"(building it would take about {links * LINK_BUILD_SECONDS / 60:,.0f} min and "
            f"{links * LINK_BUILD_BYTES / 2**30:,.1f} GiB); expected at most {MAX_FABRIC_LINKS:,} links: size the "
            "fabric to the hosts",
        )
