"""The hosts file of `sova manage --hosts-file` refuses what a newcomer may write by mistake (issue 30): a URI
that is not a libvirt URI of QEMU or goes over unauthenticated tcp, two hosts with one URI, one VF twice, a
PF that is not an interface name, a port faster than any; each problem named with its table and key."""

from __future__ import annotations

import copy

import pytest

from sova.drivers.hosts_file import hosts_from_dict
from sova.model.schema import InputError

BASE = {
    "hosts": {
        "node1": {
            "uri": "qemu+tls://node1.example.org/system",
            "sriov": {"pf": "enp65s0f0", "vfs": ["0000:41:10.0", "0000:41:10.2"]},
        },
        "node2": {"uri": "qemu+ssh://root@node2/system"},
    }
}


def problems(change) -> list[str]:
    """The problems of BASE changed by `change(hosts)`, as printed ("hosts.toml: [hosts.node1].uri: ...")."""
    doc = copy.deepcopy(BASE)
    change(doc["hosts"])
    with pytest.raises(InputError) as err:
        hosts_from_dict(doc, "hosts.toml")
    return [str(p) for p in err.value.problems]


def test_a_migration_uri_over_tcp_is_refused_as_a_uri_is():
    found = problems(lambda h: h["node1"].update(migration_uri="qemu+tcp://node1/system"))
    assert found == ["hosts.toml: [hosts.node1].migration_uri: qemu+tcp:// is unauthenticated; use qemu+tls:// or "
                     "qemu+ssh:// outside a lab"]  # fmt: skip


@pytest.mark.parametrize("key", ["uri", "migration_uri"])
@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("", "'' is not a libvirt URI of QEMU; expected one like qemu+tls://node1/system"),
        ("not a uri", "'not a uri' is not a libvirt URI of QEMU"),
        ("file:///etc/passwd", "'file:///etc/passwd' is not a libvirt URI of QEMU"),
        ("qemu+ssh://node1/system; reboot", "is not a libvirt URI of QEMU"),
        ("qemu+ssh:///system", "'qemu+ssh:///system' names no host; expected qemu+ssh://HOST/system"),
        ("qemu+tls://node1/", "expected the path /system (or /session) of the QEMU driver, got '/'"),
        ("qemu+ssh://node1:99999/system", "expected a port from 0 to 65535"),
    ],
)
def test_a_uri_that_is_not_a_libvirt_uri_of_qemu_is_refused(key, uri, expected):
    found = problems(lambda h: h["node2"].update({key: uri}))
    assert len(found) == 1 and found[0].startswith(f"hosts.toml: [hosts.node2].{key}: ") and expected in found[0]


@pytest.mark.parametrize(
    "uri",
    [
        "qemu:///system",
        "qemu+unix:///system",
        "qemu:///system?socket=/var/lib/sova-lab/host1/run/libvirt-sock",  # what `sova lab` gives manage
        "qemu://node3/system",  # libvirt's default remote transport: tls
        "qemu+ssh://admin@node3:2222/system?keyfile=/root/.ssh/sova",
        "qemu+libssh2://admin@[fd00::3]/system?known_hosts=/root/.ssh/known_hosts",
        "qemu+tls://node3/session",
    ],
)
def test_the_libvirt_uris_of_qemu_that_work_today_are_taken(uri):
    doc = copy.deepcopy(BASE)
    doc["hosts"]["node3"] = {"uri": uri, "migration_uri": uri}
    config = hosts_from_dict(doc, "hosts.toml")
    assert config.hosts["node3"] == uri and config.migration_uri["node3"] == uri


def test_two_hosts_with_one_uri_are_refused_naming_both():
    found = problems(lambda h: h["node2"].update(uri="qemu+tls://NODE1.example.org/system"))
    assert found == [
        "hosts.toml: [hosts.node2].uri: 'qemu+tls://NODE1.example.org/system' is also the uri of [hosts.node1]; "
        "expected a URI for each host"
    ]


def test_a_vf_address_given_twice_in_a_host_is_refused():
    found = problems(lambda h: h["node1"]["sriov"].update(vfs=["0000:41:10.0", "0000:41:10.2", "0000:41:10.00"]))
    assert found == [
        "hosts.toml: [hosts.node1].sriov.vfs[2]: '0000:41:10.00' is the PCI address of vfs[0] again; "
        "expected each VF once"
    ]


@pytest.mark.parametrize(
    "pf", ["eth0; reboot", "eth0 ", "$(reboot)", "a/b", "enp65s0f0np0-toolong", "", "..", "eth0:1"]
)
def test_a_pf_that_is_not_an_interface_name_is_refused(pf):
    found = problems(lambda h: h["node1"]["sriov"].update(pf=pf))
    assert found == [
        f"hosts.toml: [hosts.node1].sriov.pf: {pf!r} is not a network interface name: expected 1 to 15 letters, "
        "digits, '_', '.' or '-'"
    ]


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda h: h["node2"].update(nic_bandwidth="100Tbps"), "[hosts.node2].nic_bandwidth"),
        (lambda h: h["node1"]["sriov"].update(bandwidth=1e15), "[hosts.node1].sriov.bandwidth"),
    ],
)
def test_a_port_faster_than_any_is_refused(change, where):
    found = problems(change)
    assert len(found) == 1 and f"{where}: got " in found[0] and "> 0 and <= 3.2e+12" in found[0]


def test_a_port_speed_given_without_its_unit_is_taken_with_a_warning():
    doc = copy.deepcopy(BASE)
    doc["hosts"]["node2"]["nic_bandwidth"] = 10  # meant: 10 Gb/s
    config = hosts_from_dict(doc, "hosts.toml")
    assert config.nic_bandwidth["node2"] == 10
    assert [str(w) for w in config.warnings] == [
        "hosts.toml: [hosts.node2].nic_bandwidth: 10 bit/s is outside what is typical (>= 1 kb/s and <= 3.2 Tb/s); "
        "is the unit right? (a bare number is bit/s)"
    ]
