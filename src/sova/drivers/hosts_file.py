"""The hosts file of `sova manage --hosts-file`: each host's libvirt URI and its SR-IOV settings.

    [hosts.node1]
    uri = "qemu+tls://node1.example.org/system"
    migration_uri = "qemu+tls://node1.example.org/system"   # optional: peer-to-peer migration to it
    nic_bandwidth = "10Gbps"                                 # the port, when it has no SR-IOV table

    [hosts.node1.sriov]
    pf = "enp65s0f0"
    vfs = ["0000:41:10.0", "0000:41:10.2", "0000:41:10.4", "0000:41:10.6"]
    bandwidth = "10Gbps"
    rate_command = ["ssh", "root@node1.example.org"]         # how to run `ip link set PF vf N max_tx_rate`

Every problem is reported with its table and key, as for scenario files.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from sova.drivers.vf import SriovHost, pci_parts
from sova.model.schema import Field, InputError, Reader, read_toml

HOST_FIELDS = {
    "uri": Field("str", doc="libvirt URI of the host (qemu+tls:// or qemu+ssh://; qemu+tcp:// only in a lab)"),
    "migration_uri": Field("str", "", "where a source host's daemon reaches this one for peer-to-peer migration"),
    "nic_bandwidth": Field("bandwidth", 10e9, "bit/s of the host's port", lo=0, lo_open=True),
    "sriov": Field("table", {}, "the host's SR-IOV NIC (see below); none: no VFs"),
}
SRIOV_FIELDS = {
    "pf": Field("str", doc="the physical function's network interface"),
    "vfs": Field("list[str]", doc="PCI addresses of the VFs Sova may hand out, in VF-number order"),
    "bandwidth": Field("bandwidth", 10e9, "bit/s of the PF's port", lo=0, lo_open=True),
    "rate_command": Field("list[str]", [], "prefix that runs a command on the host (empty: locally)"),
}


@dataclass
class HostsConfig:
    hosts: dict[str, str] = field(default_factory=dict)
    migration_uri: dict[str, str] = field(default_factory=dict)
    sriov: dict[str, SriovHost] = field(default_factory=dict)
    nic_bandwidth: dict[str, float] = field(default_factory=dict)


def _runner(prefix: list[str]):
    def run(cmd: list[str]) -> None:
        r = subprocess.run([*prefix, *cmd], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join([*prefix, *cmd])}: {r.stderr.strip()}")

    return run


def load_hosts_file(path: Path) -> HostsConfig:
    return hosts_from_dict(read_toml(path, "a hosts file (TOML)"), str(path))


def hosts_from_dict(raw: dict, source: str = "<hosts file>") -> HostsConfig:
    """A parsed hosts file, checked whole; InputError with every problem and its place."""
    r = Reader(source)
    t = r.table(raw, {"hosts": Field("table")}, "")
    out = HostsConfig()
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
                run = _runner(s["rate_command"]) if s["rate_command"] else None
                out.sriov[name] = SriovHost(s["pf"], s["vfs"], s["bandwidth"], run)
    if not out.hosts and not r.problems:
        r.error("[hosts]", "no hosts; expected at least one [hosts.NAME] table with a uri")
    if r.problems:
        raise InputError(r.problems)
    return out
