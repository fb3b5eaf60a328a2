"""Placement rules: what each kind allows, what breaks it, how the scenario reads them, and conflicts."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import make_scenario
from sova.model.placement_rules import PlacementRule, RuleBook, maintenance_rule
from sova.model.rule_conflicts import rule_conflicts
from sova.model.schema import InputError

VMS = ("a", "b", "c", "d")
HOSTS = ("h1", "h2", "h3")


def bound(*rules):
    return RuleBook(rules).bind(VMS, HOSTS)


def test_anti_affinity_keeps_a_vm_off_the_hosts_of_the_others():
    rules = bound(PlacementRule("apart", "anti-affinity", ("a", "b", "c")))
    placement = np.array([0, 1, -1, 0])
    assert rules.allowed("c", placement).tolist() == [False, False, True]
    assert rules.allowed("d", placement).all()  # not bound by the rule


def test_a_migration_in_flight_counts_where_it_runs_and_where_it_goes():
    rules = bound(PlacementRule("apart", "anti-affinity", ("a", "b")))
    assert rules.allowed("b", np.array([0, 1, 2, 2]), heading={0: 2}).tolist() == [False, True, False]


def test_affinity_keeps_a_vm_with_the_others_or_where_they_go():
    rules = bound(PlacementRule("together", "affinity", ("a", "b")))
    assert rules.allowed("b", np.array([2, 0, 0, 0])).tolist() == [False, False, True]
    assert rules.allowed("b", np.array([2, 0, 0, 0]), heading={0: 1}).tolist() == [False, True, False]
    assert rules.allowed("b", np.array([-1, 0, 0, 0])).all()  # nobody placed yet: anywhere


def test_host_rules_allow_their_group_or_its_complement():
    on = bound(PlacementRule("on", "on-hosts", ("a*",), ("h1", "h2")))
    off = bound(PlacementRule("off", "off-hosts", ("*",), ("h2",)))
    placement = np.zeros(4, dtype=np.int64)
    assert on.allowed("a", placement).tolist() == [True, True, False]
    assert off.allowed("d", placement).tolist() == [True, False, True]


def test_should_rules_are_preferred_but_do_not_forbid():
    rules = bound(PlacementRule("pref", "off-hosts", ("a",), ("h1", "h2"), must=False))
    placement = np.zeros(4, dtype=np.int64)
    assert rules.allowed("a", placement).all()
    assert rules.preferred("a", placement, np.array([True, True, True])).tolist() == [False, False, True]
    assert rules.preferred("a", placement, np.array([True, True, False])).tolist() == [True, True, False]


def test_a_vm_not_yet_placed_is_bound_by_the_rules_that_name_it():
    rules = bound(PlacementRule("apart", "anti-affinity", ("a", "new*")))
    placement = np.array([1, 0, 0, 0])
    assert rules.allowed("new-1", placement).tolist() == [True, False, True]
    assert rules.allowed("new-2", placement, extra={"new-1": 0}).tolist() == [False, False, True]


def test_violations_name_the_rule_the_vms_and_the_hosts():
    rules = bound(
        PlacementRule("apart", "anti-affinity", ("a", "b")),
        PlacementRule("together", "affinity", ("c", "d")),
        PlacementRule("off", "off-hosts", ("a",), ("h1",), must=False),
    )
    found = {v.rule.name: v for v in rules.violations(np.array([0, 0, 1, 2]))}
    assert set(found) == {"apart", "together", "off"}
    assert found["apart"].vms == ("a", "b") and found["apart"].hosts == ("h1",)
    assert found["together"].hosts == ("h2", "h3")
    assert [v.rule.name for v in rules.violations(np.array([0, 0, 1, 2]), must_only=True)] == ["apart", "together"]
    assert "must anti-affinity" in found["apart"].describe()


@settings(max_examples=300, deadline=None)
@given(
    placement=st.lists(st.integers(0, 2), min_size=4, max_size=4),
    kinds=st.lists(st.sampled_from(["anti-affinity", "on-hosts", "off-hosts"]), min_size=1, max_size=3),
    members=st.lists(st.sets(st.sampled_from(VMS), min_size=2), min_size=3, max_size=3),
)
def test_a_vm_breaks_a_rule_exactly_where_the_rule_does_not_allow_it(placement, kinds, members):
    rules = bound(*(PlacementRule(f"r{i}", kind, tuple(sorted(members[i])), ("h2",)) for i, kind in enumerate(kinds)))
    vm_host = np.array(placement)
    breaking = {vm for v in rules.violations(vm_host) for vm in v.vms}
    for i, vm in enumerate(VMS):
        assert (vm in breaking) == (not rules.allowed(vm, vm_host)[vm_host[i]])
        assert (rules.breaking(vm, int(vm_host[i]), vm_host) is not None) == (vm in breaking)


def test_maintenance_is_a_must_rule_keeping_every_vm_off_the_host():
    rules = RuleBook().with_rule(maintenance_rule("h2")).bind(VMS, HOSTS)
    assert rules.allowed("anything", np.zeros(4, dtype=np.int64)).tolist() == [True, False, True]
    assert not RuleBook([maintenance_rule("h2")]).without("maintenance of h2")


def test_conflicts_name_the_vms_and_the_rules():
    book = RuleBook(
        [
            PlacementRule("apart", "anti-affinity", ("a", "b")),
            PlacementRule("ab", "affinity", ("a", "c")),
            PlacementRule("bc", "affinity", ("c", "b")),
            PlacementRule("d-on", "on-hosts", ("d",), ("h1",)),
            PlacementRule("d-off", "off-hosts", ("d",), ("h1",)),
        ]
    )
    problems = rule_conflicts(book, VMS, HOSTS)
    assert any("a, b are kept apart by apart and together by ab, bc" in p for p in problems)
    assert any("d has no host left by d-on, d-off" in p for p in problems)


def test_an_anti_affinity_rule_needs_a_host_per_vm_under_its_host_rules():
    book = RuleBook(
        [PlacementRule("apart", "anti-affinity", ("a", "b", "c")), PlacementRule("on", "on-hosts", ("a", "b"), ("h1",))]
    )
    (problem,) = rule_conflicts(book, VMS, HOSTS)
    assert "apart needs 3 hosts" in problem and "at most 2" in problem


def test_a_group_kept_together_must_fit_one_host():
    book = RuleBook([PlacementRule("together", "affinity", ("a", "b"))])
    memory = np.array([3000.0, 3000, 10, 10])
    (problem,) = rule_conflicts(book, VMS, HOSTS, memory, np.array([4096.0, 4096, 4096]))
    assert "need 6000 MiB on one host" in problem
    assert not rule_conflicts(book, VMS, HOSTS, memory, np.array([4096.0, 8192, 4096]))


HOSTS_3 = [{"name": "h{i}", "count": 3, "memory": "8GiB"}]


def test_the_scenario_places_auto_vms_within_the_rules():
    scenario = make_scenario(
        hosts=HOSTS_3,
        vms=[{"name": "v{i}", "count": 3, "host": "auto"}, {"name": "w{i}", "count": 2, "host": "random"}],
        rules=[
            {"kind": "anti-affinity", "vms": ["v*"]},
            {"kind": "affinity", "vms": ["w*"]},
            {"kind": "off-hosts", "vms": ["w*"], "hosts": ["h1"]},
        ],
    )
    where = {v.name: v.host for v in scenario.vms}
    assert len({where["v1"], where["v2"], where["v3"]}) == 3
    assert where["w1"] == where["w2"] != "h1"


@pytest.mark.parametrize(
    "rules, message",
    [
        ([{"kind": "anti-affinity", "vms": ["v*"]}], "[[rules]]: no placement can satisfy the must rules: rule-1"),
        ([{"kind": "near", "vms": ["v1", "v2"]}], "[[rules]] #1.kind: got 'near'"),
        ([{"kind": "on-hosts", "vms": ["v1"]}], "[[rules]] #1.hosts: a on-hosts rule needs its host group"),
        ([{"kind": "affinity", "vms": ["v1"], "hosts": ["h1"]}], "[[rules]] #1.hosts: a affinity rule binds VMs"),
        ([{"kind": "affinity", "vms": ["nobody*"]}], "[[rules]] #1.vms: 'nobody*' matches no VM of the scenario"),
        ([{"kind": "off-hosts", "vms": ["v1"], "hosts": ["h9"]}], "'h9' matches no host"),
        ([{"kind": "affinity", "vms": ["v1"]}], "needs at least two VMs"),
        ([{"kind": "affinity", "vms": ["v1", "v2"], "name": "x"}] * 2, "rule name 'x' is used twice"),
        ([{"kind": "affinity", "vms": ["v1", "v2"], "strength": "maybe"}], "#1.strength: got 'maybe'"),
        ({"kind": "affinity"}, "[[rules]]: expected an array of tables"),
    ],
)
def test_bad_rules_are_errors_naming_their_place(rules, message):
    with pytest.raises(InputError) as error:
        make_scenario(hosts=HOSTS_3, vms=[{"name": "v{i}", "count": 4, "host": "auto", "memory": "1GiB"}], rules=rules)
    assert message in str(error.value)


def test_a_vm_the_rules_leave_no_host_with_room_is_an_error_naming_them():
    # each host has 1 GiB left for the pair: v1 fits anywhere, v2 then only where v1 is not
    with pytest.raises(InputError, match=r"v2 found no host with room that its rules allow.*pair \(must affinity"):
        make_scenario(
            hosts=HOSTS_3,
            vms=[
                {"name": "p1", "host": "h1", "memory": "3GiB"},
                {"name": "p2", "host": "h2", "memory": "3GiB"},
                {"name": "p3", "host": "h3", "memory": "3GiB"},
                {"name": "v{i}", "count": 2, "host": "auto", "memory": "768MiB"},
            ],
            rules=[{"kind": "affinity", "vms": ["v*"], "name": "pair"}],
        )


def test_a_rules_file_for_real_hosts_names_vms_that_may_start_later_but_only_known_hosts(tmp_path):
    from sova.model.rule_reader import load_rules_file

    good = tmp_path / "rules.toml"
    good.write_text(
        '[[rules]]\nkind = "anti-affinity"\nvms = ["web*"]\n\n[[rules]]\nkind = "off-hosts"\nvms = ["db"]\nhosts = ["n1"]\n'
    )
    book = load_rules_file(good, ["n1", "n2"])
    assert [r.kind for r in book.rules] == ["anti-affinity", "off-hosts"]
    bad = tmp_path / "bad.toml"
    bad.write_text('extra = 1\n[[rules]]\nkind = "off-hosts"\nvms = ["db"]\nhosts = ["n9"]\n')
    with pytest.raises(InputError) as error:
        load_rules_file(bad, ["n1", "n2"])
    text = str(error.value)
    assert "extra: unknown key" in text and "'n9' matches no host managed here" in text and str(bad) in text


def test_a_bad_rule_is_reported_beside_other_problems_of_the_scenario():
    with pytest.raises(InputError) as error:
        make_scenario(
            hosts=HOSTS_3,
            vms=[{"name": "v1", "host": "nowhere"}],
            rules=[{"kind": "near", "vms": ["v1", "v2"]}],
        )
    text = str(error.value)
    assert "unknown host 'nowhere'" in text and "[[rules]] #1.kind: got 'near'" in text
