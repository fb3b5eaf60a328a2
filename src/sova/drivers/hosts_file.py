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

Every problem is reported with its table and key, as for scenario files. A URI is a libvirt URI of
the QEMU driver, qemu[+TRANSPORT]://[USER@]HOST[:PORT]/system (or /session, or qemu:///system for this
machine), with ?PARAMETERS as libvirt takes them; qemu+tcp:// is refused, for uri and migration_uri alike
(it is unauthenticated; `sova manage --lab` reaches the lab's hosts without a hosts file). No two hosts have
one URI, a host's VFs are distinct PCI addresses, and the PF is a Linux interface name: it reaches `ip link`
through `rate_command`, which may be a shell on the host (ssh).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from sova.drivers.flow_counters import FlowCounterHost
from sova.drivers.host_command import HostCommand
from sova.drivers.vf import SriovHost, pci_parts
from sova.model.scenario import TopologySpec
from sova.model.schema import MAX_LINK_BPS, Field, InputError, Problem, Reader, read_toml
from sova.model.topology_reader import check_topology_fits, read_topology

HOST_FIELDS = {
    "uri": Field("str", doc="libvirt URI of the host's QEMU (qemu+tls://, qemu+ssh:// or qemu:///; not qemu+tcp://)"),
    "migration_uri": Field(
        "str", "", "where a source host's daemon reaches this one for peer-to-peer migration (a URI as uri is)"
    ),
    "nic_bandwidth": Field("bandwidth", 10e9, "bit/s of the host's port", lo=0, lo_open=True, hi=MAX_LINK_BPS),
    "sriov": Field("table", {}, "the host's SR-IOV NIC (see below); none: no VFs"),
    "flows": Field("table", {}, "the host's bridge counts VM-to-VM bytes (see below); none: no traffic matrix"),
}
SRIOV_FIELDS = {
    "pf": Field("str", doc="the physical function's network interface"),
    "vfs": Field("list[str]", doc="PCI addresses of the VFs Sova may hand out, in VF-number order"),
    "bandwidth": Field("bandwidth", 10e9, "bit/s of the PF's port", lo=0, lo_open=True, hi=MAX_LINK_BPS),
    "rate_command": Field("list[str]", [], "prefix that runs a command on the host (empty: locally)"),
}
PORTS_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,15}\*?$")  # Linux names: at most 15 characters
IFNAME_RE = re.compile(r"^(?!\.\.?$)[A-Za-z0-9_.-]{1,15}$")  # one interface: no alias ':', not . or ..
# qemu[+TRANSPORT]://AUTHORITY/PATH[?QUERY]: libvirt's remote transports (tcp: refused) and local daemons
URI_RE = re.compile(r"^qemu(?:\+(unix|ssh|libssh|libssh2|tls|tcp))?://([^/?#\s]*)(/[^?#\s]*)(?:\?[^#\s]*)?$")
REMOTE_TRANSPORTS = ("ssh", "libssh", "libssh2", "tls")  # need a host name
URI_PATHS = ("/system", "/session")  # the QEMU driver's daemons
URI_EXAMPLES = "qemu+tls://node1/system, qemu+ssh://root@node1/system or qemu:///system"
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
    warnings: list[Problem] = field(default_factory=list)  # values taken that are most likely not meant


def load_hosts_file(path: Path) -> HostsConfig:
    return hosts_from_dict(read_toml(path, "a hosts file (TOML)"), str(path))


def hosts_from_dict(raw: dict, source: str = "<hosts file>") -> HostsConfig:
    """A parsed hosts file, checked whole; InputError with every problem and its place."""
    reader = Reader(source)
    top = {
        "hosts": Field("table"),
        "topology": Field("table", {}),
        "shared_storage": Field("bool", False, "disk files and devices are on storage every host reaches"),
    }
    t = reader.table(raw, top, "")
    shared = bool(t.get("shared_storage"))
    out = HostsConfig()
    topology = t.get("topology")
    hosts = t.get("hosts") if isinstance(t.get("hosts"), dict) else {}
    uri_owner: dict[tuple, str] = {}  # a URI, as libvirt compares it -> the first host that has it
    for name, spec in hosts.items():
        where = f"[hosts.{name}]"
        t = reader.table(spec, HOST_FIELDS, where)
        if t["uri"] is None:
            continue
        if _check_uri(reader, t["uri"], f"{where}.uri"):
            same = uri_owner.setdefault(_uri_key(t["uri"]), name)
            if same != name:
                reader.error(
                    f"{where}.uri", f"{t['uri']!r} is also the uri of [hosts.{same}]; expected a URI for each host"
                )
        if isinstance(spec.get("migration_uri"), str):  # written (a string), even empty
            _check_uri(reader, t["migration_uri"], f"{where}.migration_uri")
        out.hosts[name] = t["uri"]
        out.nic_bandwidth[name] = t["nic_bandwidth"]
        if t["migration_uri"]:
            out.migration_uri[name] = t["migration_uri"]
        if t["sriov"]:
            s = reader.table(t["sriov"], SRIOV_FIELDS, f"{where}.sriov")
            if s["pf"] is not None and not IFNAME_RE.match(s["pf"]):
                reader.error(
                    f"{where}.sriov.pf",
                    f"{s['pf']!r} is not a network interface name: expected 1 to 15 letters, digits, '_', '.' or '-'",
                )
            _check_vfs(reader, s["vfs"] or [], f"{where}.sriov.vfs")
            if s["pf"] and s["vfs"]:
                out.sriov[name] = SriovHost(
                    s["pf"], s["vfs"], s["bandwidth"], HostCommand(tuple(s["rate_command"] or ()))
                )
        if isinstance(spec, dict) and "flows" in spec:  # an empty table: count locally, libvirt's tap names
            f = reader.table(t["flows"], FLOW_FIELDS, f"{where}.flows")
            if f["ports"] is not None and not PORTS_RE.match(f["ports"]):
                reader.error(
                    f"{where}.flows.ports", f"{f['ports']!r} is not an interface name, with * at the end or not"
                )
            out.flows[name] = FlowCounterHost(HostCommand(tuple(f["command"] or ())), f["ports"] or "vnet*")
    if not out.hosts and not reader.problems:
        reader.error("[hosts]", "no hosts; expected at least one [hosts.NAME] table with a uri")
    if topology:
        out.topology = read_topology(reader, topology)
        check_topology_fits(reader, out.topology, len(hosts))
    if reader.problems:
        raise InputError(reader.problems)
    out.shared_storage = shared
    out.warnings = reader.warnings
    return out


def _check_uri(reader: Reader, uri: str, where: str) -> bool:
    """A libvirt URI of the QEMU driver that Sova may use (local, or remote over an authenticated transport);
    False, with the problem noted, if not."""
    problem = _uri_problem(uri)
    if problem:
        reader.error(where, problem)
    return not problem


def _uri_problem(uri: str) -> str:
    m = URI_RE.match(uri) if uri.isprintable() else None
    if m is None:
        return f"{uri!r} is not a libvirt URI of QEMU; expected one like {URI_EXAMPLES}"
    transport, authority, path = m.groups()
    if transport == "tcp":
        return "qemu+tcp:// is unauthenticated; use qemu+tls:// or qemu+ssh:// outside a lab"
    parts = urlsplit(uri)
    try:
        parts.port  # noqa: B018 - urlsplit checks the port when it is read
    except ValueError:
        return f"{uri!r}: expected a port from 0 to 65535 after the host"
    if path not in URI_PATHS:
        return f"{uri!r}: expected the path /system (or /session) of the QEMU driver, got {path!r}"
    if transport in REMOTE_TRANSPORTS and not parts.hostname:
        return f"{uri!r} names no host; expected qemu+{transport}://HOST/system"
    if transport == "unix" and authority:
        return f"{uri!r}: qemu+unix:// reaches this machine's daemon; expected qemu+unix:///system"
    return ""


def _uri_key(uri: str) -> tuple:
    """A URI as libvirt reads it: the scheme and the host name in any case, the rest as written."""
    try:
        parts = urlsplit(uri)
        return parts.scheme, parts.username, parts.hostname, parts.port, parts.path, parts.query
    except ValueError:  # a bad port, reported by _check_uri
        return (uri,)


def _check_vfs(reader: Reader, vfs: list[str], where: str) -> None:
    """Each VF a PCI address, and none twice (the same device handed to two guests)."""
    seen: dict[tuple[int, int, int, int], int] = {}
    for i, vf in enumerate(vfs):
        try:
            address = pci_parts(vf)
        except ValueError as e:
            reader.error(f"{where}[{i}]", str(e))
            continue
        first = seen.setdefault(address, i)
        if first != i:
            reader.error(f"{where}[{i}]", f"{vf!r} is the PCI address of vfs[{first}] again; expected each VF once")
