"""VM-to-VM byte counters from each host's Linux bridge (nftables), for the traffic matrix.

Each host's bridge counts, in a dynamic set of the nftables table ``sova_flows`` (family bridge), the
bytes of every frame by (source MAC, destination MAC), for frames that enter the bridge from a guest's
port (libvirt names its taps ``vnet*``). A frame is thus counted once, on its sender's host, so the sum
over hosts is each pair's bytes without double counting, also after the sender migrates. Counters that
fall (a host rebooted, the table was recreated) are rebased so the sums only grow. Frames sent through
an SR-IOV VF bypass the bridge and are not counted; Open vSwitch hosts (the Virtue paper's way) are
coming.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from sova.drivers.host_command import HostCommand

TABLE = "sova_flows"
SET = "pairs"
Pair = tuple[str, str]  # (source MAC, destination MAC), lower case


def ruleset(ports: str) -> str:
    """The nftables table that counts bytes per MAC pair for frames entering the bridge from `ports`."""
    return (
        f"table bridge {TABLE} {{\n"
        f"  set {SET} {{ type ether_addr . ether_addr; flags dynamic; size 65536; counter; }}\n"
        "  chain forward {\n"
        "    type filter hook forward priority 0; policy accept;\n"
        f'    iifname "{ports}" update @{SET} {{ ether saddr . ether daddr }}\n'
        "  }\n"
        "}\n"
    )


def parse_pairs(listing: str) -> dict[Pair, int]:
    """Bytes per MAC pair from ``nft -j list set bridge sova_flows pairs``."""
    counts: dict[Pair, int] = {}
    for item in json.loads(listing).get("nftables", []):
        for elem in item.get("set", {}).get("elem", []):
            body = elem.get("elem", {})
            macs = body.get("val", {}).get("concat", [])
            if len(macs) == 2:
                counts[(macs[0].lower(), macs[1].lower())] = int(body.get("counter", {}).get("bytes", 0))
    return counts


@dataclass
class FlowCounterHost:
    """How to reach one host's bridge counters: the command runner, and its guests' bridge ports."""

    run: HostCommand = field(default_factory=HostCommand)
    ports: str = "vnet*"


class FlowCounters:
    """Per-pair byte counts summed over the hosts that have counters; a host that cannot be read keeps
    its last counts (its error is in ``errors``) so the sums never fall."""

    def __init__(self, hosts: dict[str, FlowCounterHost]):
        self.hosts = hosts
        self.errors: dict[str, str] = {}
        self._installed: set[str] = set()
        self._last: dict[str, dict[Pair, int]] = {h: {} for h in hosts}
        self._base: dict[str, dict[Pair, int]] = {h: {} for h in hosts}

    def install(self, host: str) -> None:
        """Create the counting table on `host` unless it is there (counts survive a restart of Sova)."""
        spec = self.hosts[host]
        try:
            spec.run(["nft", "list", "table", "bridge", TABLE])
        except RuntimeError:
            spec.run(["nft", "-f", "-"], stdin=ruleset(spec.ports))
        self._installed.add(host)

    def totals(self) -> dict[Pair, int]:
        """Bytes each MAC pair has sent since counting began, over all hosts."""
        for host, spec in self.hosts.items():
            try:
                if host not in self._installed:
                    self.install(host)
                now = parse_pairs(spec.run(["nft", "-j", "list", "set", "bridge", TABLE, SET]))
            except (RuntimeError, ValueError) as e:
                self.errors[host] = str(e)
                self._installed.discard(host)  # the table may be gone: create it again next time
                continue
            self.errors.pop(host, None)
            self._rebase(host, now)
        sums: dict[Pair, int] = {}
        for host in self.hosts:
            for counts in (self._base[host], self._last[host]):
                for pair, n in counts.items():
                    sums[pair] = sums.get(pair, 0) + n
        return sums

    def _rebase(self, host: str, now: dict[Pair, int]) -> None:
        last, base = self._last[host], self._base[host]
        for pair, n in last.items():
            if now.get(pair, 0) < n:  # reset or gone: keep what it had counted
                base[pair] = base.get(pair, 0) + n
        self._last[host] = now


def vm_flows(totals: dict[Pair, int], mac_owner: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The traffic matrix as (source VM, destination VM, cumulative bytes), from pair counts and the
    VM index each MAC belongs to: frames between two VMs only (to or from anything else: left out)."""
    pairs: dict[tuple[int, int], float] = {}
    for (src_mac, dst_mac), n in totals.items():
        src, dst = mac_owner.get(src_mac), mac_owner.get(dst_mac)
        if src is not None and dst is not None and src != dst:  # a VM's two NICs are one VM
            pairs[(src, dst)] = pairs.get((src, dst), 0.0) + n
    keys = sorted(pairs)
    return (
        np.array([s for s, _ in keys], dtype=np.int64),
        np.array([d for _, d in keys], dtype=np.int64),
        np.array([pairs[k] for k in keys], dtype=float),
    )
