"""Scenario files: valid ones load; every error is reported with its location and what was expected."""

from pathlib import Path

import pytest

from helpers import ROOT, make_scenario
from sova.model.scenario_reader import scenario_from_dict
from sova.model.schema import InputError
from sova.model.sweep import load_scenario


def problems(raw) -> list[str]:
    with pytest.raises(InputError) as exc:
        scenario_from_dict(raw, source="s.toml")
    return [str(p) for p in exc.value.problems]


BASE = {"scenario": {"name": "x", "duration": 60}, "hosts": [{"name": "h1"}]}


def test_quickstart_loads_with_defaults_filled():
    s = load_scenario(ROOT / "scenarios" / "quickstart.toml")
    assert s.name == "quickstart"
    assert len(s.hosts) == 4 and s.hosts[0].nic.bandwidth == 10e9 and s.hosts[0].nic.max_vfs == 63
    assert {v.host for v in s.vms} <= {h.name for h in s.hosts}
    assert set(s.profiles) == {"default", "threshold"}


def test_counted_entries_expand_name_patterns():
    s = make_scenario(hosts=[{"name": "h{i}", "count": 3}], vms=[{"name": "v{i}", "count": 4}])
    assert [h.name for h in s.hosts] == ["h1", "h2", "h3"]
    assert [v.host for v in s.vms] == ["h1", "h2", "h3", "h1"]  # round-robin


def test_unknown_key_gets_a_did_you_mean_hint():
    (msg,) = problems({**BASE, "hosts": [{"name": "h1", "cors": 8}]})
    assert msg.startswith("s.toml: [[hosts]] #1 (h1).cors: unknown key; did you mean 'cores'?")


def test_wrong_types_and_ranges_say_what_was_expected():
    msgs = problems({**BASE, "hosts": [{"name": "h1", "cores": "many", "memory": "lots"}]})
    assert any(".cores: expected an integer, got 'many'" in m for m in msgs)
    assert any(".memory: expected a memory size like" in m for m in msgs)
    (msg,) = problems({**BASE, "vms": [{"name": "v", "host": "h1", "vcpus": 0}]})
    assert "[[vms]] #1 (v).vcpus: got 0; expected an integer >= 1" in msg


def test_every_problem_is_reported_at_once():
    raw = {
        "scenario": {"name": "x"},
        "hosts": [{"name": "h1"}],
        "vms": [{"name": "v1", "host": "nowhere"}],
        "workloads": [{"vm": "v1", "kind": "lookbusy", "duty": 2}],
        "topology": {"kind": "torus"},
    }
    msgs = problems(raw)
    assert any("[scenario].duration: missing" in m for m in msgs)
    assert any("unknown host 'nowhere'" in m for m in msgs)
    assert any("[[workloads]] #1.duty: got 2.0; expected a number >= 0 and <= 1" in m for m in msgs)
    assert any("[topology].kind: got 'torus'" in m for m in msgs)


def test_references_to_vms_are_checked():
    raw = {
        **BASE,
        "vms": [{"name": "v1", "host": "h1"}],
        "workloads": [{"vm": "w*", "kind": "netperf"}, {"vm": "v1", "kind": "httperf", "client": "ghost"}],
    }
    msgs = problems(raw)
    assert any("[[workloads]] #1.vm: matches no VM" in m for m in msgs)
    assert any("[[workloads]] #2.client: unknown VM 'ghost'" in m for m in msgs)


def test_phases_must_be_ordered_and_may_only_change_phase_parameters():
    raw = {
        **BASE,
        "vms": [{"name": "v1", "host": "h1"}],
        "workloads": [{"vm": "v1", "kind": "netperf", "phases": [{"at": 20, "duty": 0.5}, {"at": 10, "peer": "v1"}]}],
    }
    msgs = problems(raw)
    assert any("phases must be in increasing order" in m for m in msgs)
    assert any("phases #2.peer: unknown key" in m for m in msgs)


def test_memory_overcommit_on_a_host_is_refused():
    raw = {**BASE, "vms": [{"name": "v{i}", "count": 3, "host": "h1", "memory": "30GiB"}]}
    assert any("need" in m and "more memory" in m for m in problems(raw))


def test_vf_on_a_host_without_sriov_is_refused():
    raw = {
        **BASE,
        "hosts": [{"name": "h1", "nic": {"sriov": False}}],
        "vms": [{"name": "v", "host": "h1", "nic": "vf"}],
    }
    assert any("has no SR-IOV VFs" in m for m in problems(raw))


def test_topology_too_small_for_the_hosts():
    raw = {**BASE, "hosts": [{"name": "h{i}", "count": 20}], "topology": {"kind": "fat-tree", "k": 4}}
    assert any("has 16 host ports but there are 20 hosts" in m for m in problems(raw))


def test_missing_trace_file_is_named():
    raw = {
        **BASE,
        "vms": [{"name": "v", "host": "h1"}],
        "workloads": [{"vm": "v", "kind": "planetlab", "file": "nope.txt"}],
    }
    assert any("workloads]] #1.file: trace file" in m and "nope.txt' does not exist" in m for m in problems(raw))


def test_toml_syntax_errors_name_the_file(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[scenario\nname = 1\n")
    with pytest.raises(InputError, match=r"bad.toml: not valid TOML: .*line 1"):
        load_scenario(bad)


def test_missing_file_and_directory_are_clear_errors(tmp_path: Path):
    with pytest.raises(InputError, match="no such file"):
        load_scenario(tmp_path / "none.toml")
    with pytest.raises(InputError, match="is a directory"):
        load_scenario(tmp_path)


def test_disk_io_without_a_storage_server_is_refused():
    raw = {**BASE, "vms": [{"name": "v", "host": "h1"}], "workloads": [{"vm": "v", "kind": "fio"}]}
    assert any("[[workloads]] #1.kind: fio does disk IO; expected a [[storage]] server" in m for m in problems(raw))


def test_a_name_matcher_finds_exact_names_by_lookup_and_globs_in_order():
    from sova.model.name_match import NameMatcher

    matching = NameMatcher(["web2", "web10", "db1", "web1"])
    assert matching("web1") == ["web1"] and matching("web3") == []
    assert matching("web*") == ["web2", "web10", "web1"]  # the scenario's order, as fnmatch gives it
    assert matching("web?") == ["web2", "web1"] and matching("[d]b*") == ["db1"]
    assert "db1" in matching and "db2" not in matching
