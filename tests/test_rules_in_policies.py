"""Every placement algorithm and migration policy chooses only among the hosts the must rules allow."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import make_scenario
from sova.experiments.scenario_runs import run_profile
from sova.model.placement_rules import PlacementRule, RuleBook
from sova.plan.placement.annealing import anneal
from sova.plan.placement.greedy_fill import greedy_fill
from sova.plan.placement.greedy_net import greedy_net
from sova.plan.placement.milp import solve
from sova.plan.placement.random_placement import random_placement
from test_placement import pairs


def ruled_pairs():
    """The two talking pairs of test_placement, where vm0 and vm1 must be apart and vm2 must stay off h0-h2
    (another rack): the optimum with every pair together breaks the first rule."""
    p = pairs()
    p.rules = RuleBook(
        [
            PlacementRule("apart", "anti-affinity", ("vm0", "vm1")),
            PlacementRule("other-rack", "off-hosts", ("vm2",), ("h0", "h1", "h2")),
            PlacementRule("with-2", "affinity", ("vm2", "vm3")),
        ]
    ).bind(p.vm_names, p.host_names)
    return p


ALGORITHMS = {
    "greedy-fill": lambda p: greedy_fill(p),
    "greedy-net": lambda p: greedy_net(p, np.array([3, 4, 3, 3])),
    "random": lambda p: random_placement(p, np.random.default_rng(3)),
    "anneal": lambda p: anneal(p, np.array([3, 4, 3, 3]), "all", np.random.default_rng(1), steps=3000),
    "milp": lambda p: solve(ruled_pairs(), time_limit=20).x,
}


@pytest.mark.parametrize("name", ALGORITHMS)
def test_placement_algorithms_keep_the_must_rules(name):
    p = ruled_pairs()
    x = ALGORITHMS[name](p)
    assert not p.rules.violations(x, must_only=True), x
    assert x[0] != x[1] and x[2] >= 3 and x[2] == x[3]


HOSTS = [{"name": "h{i}", "count": 4, "cores": 4, "memory": "16GiB", "dom0_memory": "1GiB"}]


@pytest.mark.parametrize(
    "policies",
    [("sandpiper",), ("dsriov-vlm",), ("threshold-migration",), ("power-aware",), ("cloudscope",)],
)
def test_migration_policies_move_hot_vms_only_where_the_rules_allow(policies):
    """h1 runs hot; its VMs may only go to h4 (h2 and h3 are barred), so every move a policy starts goes
    there (without the rule, each of these policies moves a VM to h2 or h3 in the same run)."""
    scenario = make_scenario(
        hosts=HOSTS,
        vms=[{"name": "hot{i}", "count": 4, "host": "h1", "vcpus": 2}, {"name": "cool", "host": "h2"}],
        workloads=[{"kind": "lookbusy", "vm": "hot*", "util": 1.0}],
        rules=[{"kind": "off-hosts", "vms": ["hot*"], "hosts": ["h2", "h3"], "name": "not-h2-h3"}],
        scenario={"duration": 600},
        profiles={"p": {"policies": list(policies)}},
    )
    result = run_profile(scenario, "p")
    moved = [m for m in result.migrations if m.vm.startswith("hot")]
    assert moved and all(m.dst == "h4" for m in moved), [(m.vm, m.dst) for m in moved]
    rejected = [e for e in result.audit.entries if e.event == "rejected" and "would break" in e.message]
    assert not rejected  # the policy kept the rule itself; the executor had nothing to refuse
    assert result.summary["rules"]["not-h2-h3"]["broken_vm_seconds"] == 0
