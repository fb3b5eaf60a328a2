"""The hosts file of `sova manage` fuzzed: a valid file with one to three keys set to random values (any
type, NaN and infinity, nested lists and tables, new keys) is taken or refused with an InputError whose every
problem names its place; and files that are not TOML, not UTF-8 or empty are refused naming the file."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sova.drivers.hosts_file import hosts_from_dict, load_hosts_file
from sova.model.schema import InputError
from test_scenario_fuzz import mangled

BASE = {
    "hosts": {
        "node1": {
            "uri": "qemu+tls://node1.example.org/system",
            "migration_uri": "qemu+tls://node1.example.org/system",
            "nic_bandwidth": "10Gbps",
            "sriov": {"pf": "enp65s0f0", "vfs": ["0000:41:10.0", "0000:41:10.2"], "bandwidth": "10Gbps"},
        },
        "node2": {"uri": "qemu+ssh://root@node2/system", "flows": {"command": ["ssh", "root@node2"], "ports": "vnet*"}},
    },
    "topology": {"kind": "leaf-spine", "leaves": 2, "hosts_per_leaf": 2},
}
KEYS = (
    *("hosts", "uri", "migration_uri", "nic_bandwidth", "sriov", "pf", "vfs", "bandwidth", "rate_command", "x"),
    *("flows", "command", "ports", "topology", "kind", "leaves", "hosts_per_leaf"),
)


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_mangled_hosts_file_is_taken_or_refused_with_every_problem_placed(data):
    doc = mangled(data, BASE, KEYS)
    try:
        config = hosts_from_dict(doc, "hosts.toml")
    except InputError as err:
        assert err.problems and all(p.location.startswith("hosts.toml") and p.message for p in err.problems)
    else:
        assert config.hosts and all(isinstance(uri, str) for uri in config.hosts.values())


@pytest.mark.parametrize(
    "content, message",
    [
        (b"[hosts.node1\nuri = 1", "not valid TOML"),
        (b"\xff\xfe\x00garbage", "UTF-8"),
        (b"", "hosts: missing; expected a table"),
        (b"hosts = [1, 2]", "expected a table"),
    ],
)
def test_a_hosts_file_that_is_not_one_is_refused_naming_the_file(tmp_path, content, message):
    path = tmp_path / "hosts.toml"
    path.write_bytes(content)
    with pytest.raises(InputError) as err:
        load_hosts_file(path)
    assert str(path) in str(err.value) and message in str(err.value)
