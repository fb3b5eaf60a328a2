"""A tree fabric as nested host groups, the form the minimax objective and the MIP need.

Level 0 groups are single hosts (their NIC link); higher levels are the hosts under one ToR/edge/leaf
switch, then under one aggregation block or pod. Traffic between two hosts crosses, at every level
where their groups differ, the up-links of the sender's group and the down-links of the receiver's.
With ECMP splitting evenly over a group's up-links (or a single up-link, as in a three-tier tree), a
group's link utilization is its cross traffic over its total up-link capacity (the notes' compact
formulation; exact for trees, and for fat trees with even splitting).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sova.model.scenario import TopologySpec


@dataclass(frozen=True)
class Levels:
    """group[l][h]: host h's group at level l; cap[l][g]: bit/s of group g's up-links (each direction)."""

    group: tuple[np.ndarray, ...]
    cap: tuple[np.ndarray, ...]
    names: tuple[str, ...]  # what a level is: host, tor, agg, ...

    @property
    def n_hosts(self) -> int:
        return len(self.group[0])


def levels_for(spec: TopologySpec, n_hosts: int, nic: np.ndarray | None = None) -> Levels:
    """The groups of the fabric a scenario builds (sova.model.topology.build_topology), host NICs at level 0."""
    h = np.arange(n_hosts)
    host_cap = np.full(n_hosts, spec.link_speed) if nic is None else np.minimum(nic, spec.link_speed)
    up = spec.uplink_speed or spec.link_speed
    groups, caps, names = [h], [host_cap], ["host"]
    if spec.kind == "leaf-spine":
        leaf = h // spec.hosts_per_leaf
        groups.append(leaf)
        caps.append(np.full(leaf.max() + 1, spec.spines * up))
        names.append("leaf")
    elif spec.kind == "fat-tree":
        half = spec.k // 2
        per_edge = spec.hosts_per_edge or half
        edge = h // per_edge
        groups += [edge, edge // half]
        caps += [np.full(edge.max() + 1, half * up), np.full(edge.max() // half + 1, half * half * up)]
        names += ["edge", "pod"]
    elif spec.kind == "three-tier":
        rack = h // spec.hosts_per_rack
        tor_up = spec.hosts_per_rack * spec.link_speed / spec.tor_oversubscription
        agg = rack // spec.racks_per_agg
        n_aggs = -(-spec.racks // spec.racks_per_agg)
        racks_here = np.minimum(spec.racks_per_agg, spec.racks - np.arange(n_aggs) * spec.racks_per_agg)
        groups += [rack, agg]
        caps += [np.full(max(spec.racks, rack.max() + 1), tor_up), racks_here * tor_up / spec.agg_oversubscription]
        names += ["tor", "agg"]
    elif spec.kind != "single-switch":
        raise ValueError(f"placement needs a tree fabric; topology kind {spec.kind!r} is not one")
    return Levels(tuple(groups), tuple(np.asarray(c, dtype=float) for c in caps), tuple(names))
