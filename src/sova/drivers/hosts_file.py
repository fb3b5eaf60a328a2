"""The hosts file of `sova manage --hosts-file`: each host's libvirt URI and its SR-IOV settings.

    shared_storage = true                                    # guests' disks on storage every host mounts
    [hosts.node1]
    uri = "qemu+tls://node1.example.org/system"
    migration_uri = "qemu+tls://node1.example.org/system"   # optional: peer-to-peer migration to it
    nic_bandwidth = "10Gbps"                                 # the port, when it has no SR-IOV table

    [hosts.node1.sriov]
    pf = "enp65s0f0"
    vfs = ["0000:41:10.0", "0000:41:10.2", "0000:41:10.4", "0000:41:10.6"]
    bandwidth = "10Gbps"
    rate_command = ["ssh", "root@node1.example.org"]         # how to run `ip link set PF vf N max_tx_rate`

    [hosts.node1.flows]                                      # VM-to-VM byte counters on the host's bridge
    command = ["ssh", "root@node1.example.org"]              # how to run `nft` there (empty: locally)
    ports = "vnet*"                                          # the guests' bridge ports

    [topology]                                               # the fabric, hosts in file order (as in a
    kind = "leaf-spine"                                      # scenario; default: one switch)
    hosts_per_leaf = 16

Every problem is reported with its table and key, as for scenario files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sova.drivers.flow_counters import FlowCounterHost
from sova.drivers.host_command import HostCommand
from sova.drivers.vf import SriovHost, pci_parts
from sova.model.scenario import TopologySpec
from sova.model.scenario_reader import check_topology_fits, read_topology
from sova.model.schema import Field, InputError, Reader, read_toml

HOST_FIELDS = {
    "uri": Field("str", doc="libvirt URI of the host (qemu+tls:// or qemu+ssh://; qemu+tcp:// only in a lab)"),
    "migration_uri": Field("str", "", "where a source host's daemon reaches this one for peer-to-peer migration"),
    "nic_bandwidth": Field("bandwidth", 10e9, "bit/s of the host's port", lo=0, lo_open=True),
    "sriov": Field("table", {}, "the host's SR-IOV NIC (see below); none: no VFs"),
    "flows": Field("table", {}, "the host's bridge counts VM-to-VM bytes (see below); none: no traffic matrix"),
}
SRIOV_FIELDS = {
    "pf": Field("str", doc="the physical function's network interface"),
    "vfs": Field("list[str]", doc="PCI addresses of the VFs Sova may hand out, in VF-number order"),
    "bandwidth": Field("bandwidth", 10e9, "bit/s of the PF's port", lo=0, lo_open=True),
    "rate_command": Field("list[str]", [], "prefix that runs a command on the host (empty: locally)"),
}
PORTS_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,15}\*?$")  # Linux names: at most 15 characters
FLOW_FIELDS = {
    "command": Field("list[str]", [], "prefix that runs `nft` on the host (empty: locally)"),
    "ports": Field("str", "vnet*", "the guests' ports on the bridge, a name or nftables wildcard"),
}


@dataclass
class HostsConfig:
    hosts: dict[str, str] = field(default_factory=dict)
    migration_uri: dict[str, str] = field(default_factory=dict)
    sriov: dict[str, SriovHost] = field(default_factory=dict)
    nic_bandwidth: dict[str, float] = field(default_factory=dict)
    flows: dict[str, FlowCounterHost] = field(default_factory=dict)
    topology: TopologySpec | None = None
    shared_storage: bool = False  # a failed host's VMs can be booted on another (HA restart)


def load_hosts_file(path: Path) -> HostsConfig:
    return hosts_from_dict(read_toml(path, "a hosts file (TOML)"), str(path))


def hosts_from_dict(raw: dict, source: str = "<hosts file>") -> HostsConfig:
    """A parsed hosts file, checked whole; InputError with every problem and its place."""
    r = Reader(source)
    top = {
        "hosts": Field("table"),
        "topology": Field("table", {}),
        "shared_storage": Field("bool", False, "disk files and devices are on storage every host reaches"),
    }
    t = r.table(raw, top, "")
    shared = bool(t.get("shared_storage"))
    out = HostsConfig()
    topology = t.get("topology")
    hosts = t.get("hosts") if isinstance(t.get("hosts"), dict) else {}
    for name, spec in hosts.items():
        where = f"[hosts.{name}]"
        t = r.table(spec, HOST_FIELDS, where)
        if t["uri"] is None:
            continue
        if t["uri"].startswith("qemu+tcp://"):
            r.error(f"{where}.uri", "qemu+tcp:// is unauthenticated; use qemu+tls:// or qemu+ssh:// outside a lab")
        out.hosts[name] = t["uri"]
        out.nic_bandwidth[name] = t["nic_bandwidth"]
        if t["migration_uri"]:
            out.migration_uri[name] = t["migration_uri"]
        if t["sriov"]:
            s = r.table(t["sriov"], SRIOV_FIELDS, f"{where}.sriov")
            for i, vf in enumerate(s["vfs"] or []):
                try:
                    pci_parts(vf)
                except ValueError as e:
                    r.error(f"{where}.sriov.vfs[{i}]", str(e))
            if s["pf"] and s["vfs"]:
                out.sriov[name] = SriovHost(
                    s["pf"], s["vfs"], s["bandwidth"], HostCommand(tuple(s["rate_command"] or ()))
                )
        if isinstance(spec, dict) and "flows" in spec:  # an empty table: count locally, libvirt's tap names
            f = r.table(t["flows"], FLOW_FIELDS, f"{where}.flows")
            if f["ports"] is not None and not PORTS_RE.match(f["ports"]):
                r.error(f"{where}.flows.ports", f"{f['ports']!r} is not an interface name, with * at the end or not")
            out.flows[name] = FlowCounterHost(HostCommand(tuple(f["command"] or ())), f["ports"] or "vnet*")
    if not out.hosts and not r.problems:
        r.error("[hosts]", "no hosts; expected at least one [hosts.NAME] table with a uri")
    if topology:
        out.topology = read_topology(r, topology)
        check_topology_fits(r, out.topology, len(hosts))
    if r.problems:
        raise InputError(r.problems)
    out.shared_storage = shared
    return out
