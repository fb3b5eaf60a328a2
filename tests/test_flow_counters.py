"""The traffic matrix from a Linux bridge: nftables pair counters, summed over hosts, mapped to VMs.

A real bridge in network namespaces this test creates (two "guests" as veth ends, one port named like a
libvirt tap and one like an uplink) counts what it forwards; the unit tests beside it cover parsing,
rebasing after a reset, a host that cannot be read, and the mapping of MACs to VMs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid

import numpy as np
import pytest

from sova.drivers.flow_counters import FlowCounterHost, FlowCounters, parse_pairs, ruleset, vm_flows
from sova.drivers.host_command import HostCommand

A, B, C = "52:54:00:00:00:0a", "52:54:00:00:00:0b", "52:54:00:00:00:0c"


def listing(counts: dict[tuple[str, str], int]) -> str:
    elems = [
        {"elem": {"val": {"concat": [s, d]}, "counter": {"packets": 1, "bytes": n}}} for (s, d), n in counts.items()
    ]
    return json.dumps({"nftables": [{"metainfo": {}}, {"set": {"name": "pairs", "elem": elems}}]})


class ScriptedHost:
    """A host's nft as a list of answers to `list set` (an exception: the host cannot be reached)."""

    def __init__(self, answers):
        self.answers, self.commands = list(answers), []

    def __call__(self, cmd, stdin=None):
        self.commands.append((cmd, stdin))
        if cmd[:3] == ["nft", "list", "table"]:
            return ""
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return listing(answer)


def test_parse_pairs_reads_bytes_per_mac_pair_and_lowers_the_case():
    text = listing({(A.upper(), B): 1500, (B, A): 60})
    assert parse_pairs(text) == {(A, B): 1500, (B, A): 60}
    assert parse_pairs(json.dumps({"nftables": [{"set": {"name": "pairs"}}]})) == {}  # an empty set


def test_sums_over_hosts_stay_monotonic_across_a_reset_and_an_unreachable_host():
    one = ScriptedHost([{(A, B): 100}, {(A, B): 300}, {(A, B): 50}, RuntimeError("ssh: no route"), {(A, B): 70}])
    two = ScriptedHost([{}, {(A, B): 10}, {(A, B): 20}, {(A, B): 40}, {(A, B): 40}])
    flows = FlowCounters({"one": FlowCounterHost(one), "two": FlowCounterHost(two)})
    seen = [flows.totals().get((A, B), 0) for _ in range(5)]
    # 300 then a reset to 50 (the table was recreated): 300 kept; the sender moved to host two meanwhile
    assert seen == [100, 310, 370, 390, 410]
    assert not flows.errors  # host one answered again


def test_an_unreadable_host_is_named_in_errors_and_its_table_is_checked_again():
    host = ScriptedHost([RuntimeError("nft: command not found"), {(A, B): 5}])
    flows = FlowCounters({"n1": FlowCounterHost(host)})
    assert flows.totals() == {} and "command not found" in flows.errors["n1"]
    assert flows.totals() == {(A, B): 5} and not flows.errors
    installs = [cmd for cmd, _ in host.commands if cmd[:3] == ["nft", "list", "table"]]
    assert len(installs) == 2


def test_vm_flows_maps_macs_to_vms_and_leaves_out_anything_else():
    owner = {A: 0, B: 1, C: 1}  # VM 1 has two NICs (its virtio NIC and its VF)
    totals = {(A, B): 10, (A, C): 5, (B, A): 7, (C, B): 99, (A, "ff:ff:ff:ff:ff:ff"): 3, ("02:00:00:00:00:01", A): 4}
    src, dst, nbytes = vm_flows(totals, owner)
    assert src.tolist() == [0, 1] and dst.tolist() == [1, 0] and nbytes.tolist() == [15.0, 7.0]
    empty = vm_flows({}, owner)
    assert [len(x) for x in empty] == [0, 0, 0] and empty[0].dtype == np.int64


def test_host_command_names_the_command_and_its_error():
    with pytest.raises(RuntimeError, match="false: exit status 1"):
        HostCommand()(["false"])
    with pytest.raises(RuntimeError, match="no-such-command-here"):
        HostCommand(("no-such-command-here",))(["x"])
    assert HostCommand()(["cat"], stdin="hello") == "hello"


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("nft") is None, reason="needs root and nftables (`make` installs it)"
)
def test_a_real_bridge_counts_what_guest_ports_send_once_and_not_what_the_uplink_brings():
    tag = uuid.uuid4().hex[:6]
    host, left, right = f"sova-fc-{tag}", f"sova-fc-{tag}-a", f"sova-fc-{tag}-b"

    def ip(*args, ns=None):
        cmd = ["ip", *(["-n", ns] if ns else []), *args]
        subprocess.run(cmd, check=True, capture_output=True)

    try:
        for ns in (host, left, right):
            ip("netns", "add", ns)
        ip("link", "add", "br0", "type", "bridge", ns=host)
        for port, peer, ns, mac, addr in (
            ("vnet0", "eth0", left, A, "10.77.0.1"),
            ("up0", "eth0", right, B, "10.77.0.2"),
        ):
            ip("link", "add", port, "type", "veth", "peer", "name", peer, "netns", ns, ns=host)
            ip("link", "set", port, "master", "br0", "up", ns=host)
            ip("link", "set", peer, "address", mac, "up", ns=ns)
            ip("addr", "add", f"{addr}/24", "dev", peer, ns=ns)
        ip("link", "set", "br0", "up", ns=host)
        run = HostCommand(("ip", "netns", "exec", host))
        flows = FlowCounters({"h": FlowCounterHost(run)})
        assert flows.totals() == {}  # the table is created, empty
        flows.install("h")  # again: already there, left as it is (no second rule counting twice)
        assert run(["nft", "list", "table", "bridge", "sova_flows"]).count("update @pairs") == 1
        subprocess.run(
            ["ip", "netns", "exec", left, "busybox", "ping", "-c", "3", "-s", "1000", "10.77.0.2"],
            check=True,
            capture_output=True,
        )
        totals = flows.totals()
        assert totals[(A, B)] >= 3 * 1000  # three echo requests from the guest's port
        assert (B, A) not in totals  # the replies came in through the uplink: counted on their sender's host
    finally:
        for ns in (host, left, right):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_the_ruleset_counts_at_the_given_ports_only():
    text = ruleset("tap*")
    assert 'iifname "tap*" update @pairs { ether saddr . ether daddr }' in text and "table bridge sova_flows" in text
