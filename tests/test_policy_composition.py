"""Policies that compose: conflicts settled by priority and recorded, the extension points (filter, score,
pin) of one policy binding the others, and each policy seeing how its earlier actions ended.

The arbiter's rules are unit-tested; the runtime's use of them, the extension points and the outcomes run
on the simulator, with small test policies that want given actions next to the shipped ones.
"""

from __future__ import annotations

import numpy as np

from helpers import make_scenario
from sova.control.arbiter import Claim, IoControl, arbitrate
from sova.control.runtime import Runtime
from sova.drivers.sim import SimDriver
from sova.model.actions import FAILED, OK, REJECTED, AttachVF, DetachVF, Migrate, SetHostPower, SetIoLimit
from sova.model.scenario import ControlSpec
from sova.model.schema import Field
from sova.plan.base import Policy, registry
from sova.sim.engine import Simulator


def claim(action, rank=0, order=0, running=False, queued=False):
    return Claim(action, rank, order, running, queued)


def migrate(vm, dst, policy):
    return Migrate(vm=vm, dst=dst, policy=policy, reason="test")


def test_the_higher_priority_wins_a_vm_and_the_loser_is_told_by_whom():
    low, high = migrate("v1", "h2", "low"), migrate("v1", "h3", "high")
    verdict = arbitrate([claim(low, 10, 0), claim(high, 20, 1)], [])
    assert verdict.lost == {id(low): "conflicts with migrate vm=v1 dst=h3 of high (priority 20 > 10)"}


def test_on_equal_priority_the_policy_earlier_in_the_profile_wins():
    first, second = AttachVF(vm="v1", policy="a"), migrate("v1", "h2", "b")
    verdict = arbitrate([claim(second, 5, 1), claim(first, 5, 0)], [])
    assert verdict.lost == {
        id(second): "conflicts with attach-vf vm=v1 rate=0 of a (priority 5 for both; a comes first)"
    }


def test_one_policys_own_actions_never_conflict():
    detach, move = DetachVF(vm="v1", policy="dsriov-vlm"), migrate("v1", "h2", "dsriov-vlm")
    assert arbitrate([claim(detach), claim(move)], []).lost == {}


def test_a_running_action_stands_and_a_queued_one_yields_only_to_a_higher_priority():
    running = migrate("v1", "h2", "low")
    new = migrate("v1", "h3", "high")
    verdict = arbitrate([claim(new, 99, 1)], [claim(running, 1, 0, running=True)])
    assert verdict.lost == {id(new): "conflicts with migrate vm=v1 dst=h2 of low, under way"}
    queued = migrate("v1", "h2", "low")
    verdict = arbitrate([claim(new, 99, 1)], [claim(queued, 1, 0, queued=True)])
    assert not verdict.lost and [(c.action, why) for c, why in verdict.preempted] == [
        (queued, "conflicts with migrate vm=v1 dst=h3 of high (priority 99 > 1)")
    ]
    same = migrate("v1", "h3", "peer")
    verdict = arbitrate([claim(same, 1, 0)], [claim(queued, 1, 1, queued=True)])  # a tie: the queued one stays
    assert id(same) in verdict.lost and not verdict.preempted


def test_a_vm_placed_on_a_host_another_policy_puts_to_sleep_is_a_conflict_but_waking_it_is_not():
    sleep = SetHostPower(host="h2", state="sleep", policy="energy")
    into = migrate("v1", "h2", "relief")
    verdict = arbitrate([claim(into, 50, 0), claim(sleep, 20, 1)], [])
    assert list(verdict.lost) == [id(sleep)]
    wake = SetHostPower(host="h2", state="on", policy="energy")
    assert arbitrate([claim(into, 50, 0), claim(wake, 20, 1)], []).lost == {}


def test_an_io_controllers_hold_on_a_vm_clashes_with_io_limits_only():
    hold = claim(IoControl("v1", policy="see"), 60, 0, queued=True)
    move = Migrate(vm="v1", dst="h2", policy="mover")
    assert arbitrate([claim(move, 50, 1)], [hold]) == arbitrate([claim(move, 50, 1)], [])  # a move is no IO limit
    limit = SetIoLimit(vm="v1", iops=100.0, policy="limiter")
    assert "IO control of v1 of see" in arbitrate([claim(limit, 50, 1)], [hold]).lost[id(limit)]
    taken = arbitrate([claim(limit, 70, 1)], [hold])
    assert taken.lost == {} and [c.action for c, _ in taken.preempted] == [hold.action]


class Wants(Policy):
    """A test policy that wants the actions it was given, once, at its first round; it keeps what it was told
    of their ends."""

    name = "test-wants"
    schema = {"period": Field("duration", 5.0, "")}

    def __init__(self, name: str, actions=(), priority: int = 0, **hooks):
        super().__init__(period=5.0, priority=priority)
        self.name, self.wanted, self.seen = name, list(actions), []
        for hook, fn in hooks.items():
            setattr(self, hook, fn)

    def plan(self, knowledge, findings):
        self.seen += self.outcomes
        wanted, self.wanted = self.wanted, []
        return [Migrate(vm=a.vm, dst=a.dst, policy=self.name, reason="test") for a in wanted]


class Filters(Wants):
    def filter_hosts(self, knowledge, vm, candidates):
        return self.keep(knowledge, vm, candidates)


class Scores(Wants):
    def score_hosts(self, knowledge, vm, candidates):
        return self.score(knowledge, vm, candidates)


class Pins(Wants):
    def pinned(self, knowledge):
        return self.pins


HOSTS = [{"name": "h{i}", "count": 4, "cores": 4, "memory": "16GiB", "dom0_memory": "1GiB"}]


def run(policies, seconds=30, vms=None, workloads=None):
    scenario = make_scenario(
        hosts=HOSTS, vms=vms or [{"name": "v{i}", "count": 3, "host": "h1"}], workloads=workloads or []
    )
    sim = Simulator(scenario)
    rt = Runtime(SimDriver(sim), policies, ControlSpec(monitor_period=1.0, hold_down=0))
    rt.tick()
    for _ in range(seconds):
        sim.step()
        rt.tick()
    return sim, rt


def test_the_runtime_settles_a_conflict_by_priority_and_the_audit_says_why():
    low = Wants("low", [migrate("v1", "h2", "")], priority=10)
    high = Wants("high", [migrate("v1", "h3", "")], priority=20)
    sim, rt = run([low, high])
    assert sim.host_names[sim.vms.host[sim.vm_names.index("v1")]] == "h3"
    (lost,) = [e for e in rt.audit.entries if e.event == "rejected"]
    assert lost.policy == "low" and lost.message == "conflicts with migrate vm=v1 dst=h3 of high (priority 20 > 10)"
    assert [(a.vm, o.status) for a, o in low.seen] == [("v1", REJECTED)]  # told at its next round
    assert [(a.vm, o.status) for a, o in high.seen] == [("v1", OK)]


def test_a_policy_sees_the_outcomes_of_its_earlier_actions_at_its_next_round():
    mover = Wants("mover", [migrate("v1", "h2", ""), migrate("v2", "nowhere", "")])
    run([mover], seconds=12)
    ended = {(a.vm, o.status) for a, o in mover.seen}
    assert ended == {("v1", OK), ("v2", REJECTED)}


HOT = {
    "vms": [{"name": "hot{i}", "count": 4, "host": "h1", "vcpus": 2}, {"name": "cool", "host": "h2"}],
    "workloads": [{"kind": "lookbusy", "vm": "hot*", "util": 1.0}],
}


def hot_run(*extra, policy="sandpiper", seconds=600):
    """h1 runs hot under `policy`, beside the test policies in `extra`: the hot VMs' migrations (VM, dst)."""
    cls = registry()[policy]
    own = cls(**cls.defaults())
    _, rt = run([own, *extra], seconds, **HOT)
    done = [e for e in rt.audit.entries if e.event == "finished" and e.status == OK and e.policy == policy]
    return [(e.target, e.action.split("dst=")[1]) for e in done if e.target.startswith("hot")]


def test_a_peers_filter_keeps_a_migration_policy_off_the_hosts_it_bars():
    free = hot_run()
    assert any(dst in ("h2", "h3") for _, dst in free)  # where sandpiper goes by itself
    only_h4 = Filters("guard", priority=50, keep=lambda k, vm, c: np.array([h == "h4" for h in k.latest.hosts]))
    guarded = hot_run(only_h4)
    assert guarded and all(dst == "h4" for _, dst in guarded), guarded


def test_a_filter_of_a_lower_priority_does_not_bind_but_a_score_guides_whatever_its_priority():
    weak = Filters("guard", priority=10, keep=lambda k, vm, c: np.array([h == "h4" for h in k.latest.hosts]))
    moves = hot_run(weak)
    assert any(dst != "h4" for _, dst in moves)
    assert moves[0][1] == "h3"  # by itself, sandpiper sends the first VM to h3, the least loaded
    likes_h2 = Scores("likes", priority=0, score=lambda k, vm, c: np.array([h == "h2" for h in k.latest.hosts], float))
    moves = hot_run(likes_h2)
    assert moves[0][1] == "h2", moves  # among the hosts sandpiper finds fit, the one the scorer likes


def test_a_pinned_vm_is_left_where_it_runs_and_the_others_move_instead():
    free = hot_run()
    pinned = {vm for vm, _ in free}
    pins = Pins("pins", priority=60)
    pins.pins = {vm: "test" for vm in pinned}
    moves = hot_run(pins)
    assert moves and not {vm for vm, _ in moves} & pinned, moves


def test_a_peers_pin_and_filter_bind_a_policy_that_never_asked_and_the_audit_says_why():
    """`Wants` proposes its moves without HostFilter: the runtime holds them to the peers' pins and filters."""
    mover = Wants("mover", [migrate("v1", "h2", ""), migrate("v2", "h3", ""), migrate("v3", "h4", "")], priority=30)
    pins = Pins("pins", priority=60)
    pins.pins = {"v1": "its disk is held to an SLO here"}
    off_h3 = Filters("guard", priority=50, keep=lambda k, vm, c: np.array([h != "h3" for h in k.latest.hosts]))
    sim, rt = run([mover, pins, off_h3], seconds=12)
    where = {vm: sim.host_names[sim.vms.host[sim.vm_names.index(vm)]] for vm in ("v1", "v2", "v3")}
    assert where == {"v1": "h1", "v2": "h1", "v3": "h4"}
    refused = {e.target: e.message for e in rt.audit.entries if e.event == "rejected"}
    assert refused == {"v1": "v1 is pinned by pins: its disk is held to an SLO here", "v2": "guard keeps v2 off h3"}
    assert {(a.vm, o.status) for a, o in mover.seen} == {("v1", REJECTED), ("v2", REJECTED), ("v3", OK)}
    weak = Pins("weak", priority=10)  # a pin of a lower priority binds no one
    weak.pins = {"v1": "test"}
    sim, _ = run([Wants("mover", [migrate("v1", "h2", "")], priority=30), weak], seconds=12)
    assert sim.host_names[sim.vms.host[sim.vm_names.index("v1")]] == "h2"


def test_every_policy_has_a_priority_parameter_with_its_classs_default():
    known = registry()
    assert (
        known["keep-rules"].schema["priority"].default == 100 and known["dsriov-vlm"].schema["priority"].default == 50
    )
    assert (
        known["greedy-net"].schema["priority"].default == 30 and known["power-aware"].schema["priority"].default == 20
    )
    assert all("priority" in cls.schema for cls in known.values())


def defaults(name: str, **changed):
    cls = registry()[name]
    return cls(**{**cls.defaults(), **changed})


def test_greedy_nets_score_sends_a_hot_vm_towards_the_vm_it_talks_to():
    """Hotspot migration and network-aware placement in one profile: sandpiper relieves h1, and greedy-net's
    score (the share of a VM's traffic with each host's VMs) sends the VM that streams to `peer` to peer's
    host; alone, sandpiper sends it to the least loaded host."""
    talking = {
        "vms": [{"name": "hot{i}", "count": 4, "host": "h1", "vcpus": 2}, {"name": "peer", "host": "h4"}],
        "workloads": [
            {"kind": "lookbusy", "vm": "hot*", "util": 1.0},
            {"kind": "netperf", "vm": "hot2", "peer": "peer", "rate": "500Mb/s"},
        ],
    }

    def first_move_of_hot2(*extra):
        own = defaults("sandpiper")
        _, rt = run([own, *extra], 600, **talking)
        (done,) = [e for e in rt.audit.entries if e.event == "finished" and e.target == "hot2"]
        return done.action.split("dst=")[1]

    assert first_move_of_hot2() != "h4"
    assert first_move_of_hot2(defaults("greedy-net", cycle=1e6)) == "h4"


def test_dsriov_scores_the_hosts_with_a_free_vf_for_a_vm_on_a_vf_and_has_no_say_for_others():
    hosts = [{"name": "h1", "nic": {"max_vfs": 1}}, {"name": "h2", "nic": {"max_vfs": 1}}, {"name": "h3"}]
    vms = [
        {"name": "on-vf", "host": "h1", "nic": "vf"},
        {"name": "taken", "host": "h2", "nic": "vf"},
        {"name": "plain"},
    ]
    sim = Simulator(make_scenario(hosts=hosts, vms=vms))
    rt = Runtime(SimDriver(sim), [], ControlSpec())
    rt.tick()
    dsriov, everywhere = defaults("dsriov"), np.ones(3, dtype=bool)
    snap = rt.knowledge.latest
    assert snap.vfs_used.tolist() == [1, 1, 0]
    score = dsriov.score_hosts(rt.knowledge, snap.vm_position["on-vf"], everywhere)
    assert score.tolist() == [0.0, 0.0, 1.0]  # h1 and h2 have their one VF taken
    assert dsriov.score_hosts(rt.knowledge, snap.vm_position["plain"], everywhere) is None


def test_see_pins_its_vms_only_when_asked():
    see = defaults("see")
    see.vms = ("db",)
    assert see.pinned(None) == {}
    see.settings["pin"] = True
    assert see.pinned(None) == {"db": "its storage SLO is held where it runs"}


def test_a_placement_policy_whose_migrations_fail_measures_again_instead_of_retrying_the_wave():
    from dataclasses import replace

    from sova.experiments.scenario_runs import run_profile
    from sova.model.sweep import load_scenario

    scenario = load_scenario("scenarios/examples/placement-pairs.toml")
    scenario = replace(scenario, simulator={**scenario.simulator, "migration_failure_rate": 1.0})
    result = run_profile(scenario, "greedy-fill")
    failed = [e for e in result.audit.entries if e.event == "finished" and e.status == FAILED]
    notes = [e for e in result.audit.entries if e.event == "note" and "measuring again" in e.reason]
    assert failed and notes and notes[0].time > failed[0].time
    # one wave per cycle: each cycle's four moves fail once, and nothing is retried until the next cycle
    assert len(failed) == 4 * len(notes), (len(failed), len(notes))


def test_cloudscopes_guard_bars_the_hosts_where_a_vm_is_predicted_slow_and_only_when_asked():
    hosts = [{"name": "h{i}", "count": 3, "cores": 4, "memory": "16GiB"}]
    vms = [{"name": "mover", "host": "h1", "vcpus": 2}, {"name": "busy{i}", "count": 4, "host": "h2", "vcpus": 2}]
    sim = Simulator(make_scenario(hosts=hosts, vms=vms, workloads=[{"kind": "lookbusy", "vm": "*", "util": 1.0}]))
    rt = Runtime(SimDriver(sim), [], ControlSpec(monitor_period=1.0))
    rt.tick()
    for _ in range(70):  # a whole window
        sim.step()
        rt.tick()
    mover, everywhere = rt.knowledge.latest.vm_position["mover"], np.ones(3, dtype=bool)
    kept = defaults("cloudscope").filter_hosts(rt.knowledge, mover, everywhere)
    assert kept.tolist() == [True, False, True]  # on h2, eight busy vCPUs on four cores: predicted 1.75
    assert defaults("cloudscope", guard=False).filter_hosts(rt.knowledge, mover, everywhere) is None
