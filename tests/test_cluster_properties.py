"""Random clusters, workloads, rules, drains, crashes and lesser faults under every migration profile, alone
and composed (hypothesis, seeded).

At every step of every run: no host holds more memory or VFs than it has, nor is given more CPU than its
cores; every VM is on exactly one host; no must rule is broken, but for an affinity group while one of
its VMs has a move under way in the executor (a group moves one VM at a time); and every action proposed
ends in the audit log with
its outcome (or is still running or queued when the run ends). `SOVA_PROPERTY_EXAMPLES` sets how many
clusters a run draws (75 by default; docs/reliability.md gives the count run once).
"""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from helpers import make_scenario
from sova.control.profiles import build_policies
from sova.control.runtime import Runtime
from sova.drivers.sim import SimDriver
from sova.experiments.event_player import EventPlayer
from sova.model.actions import OK, RUNNING, Migrate, RestartVM
from sova.model.schema import InputError
from sova.sim.engine import Simulator

EXAMPLES = int(os.environ.get("SOVA_PROPERTY_EXAMPLES", "75"))
PROFILES = (
    *("none", "sandpiper", "dsriov-vlm", "threshold-migration", "power-aware", "cloudscope"),
    *("sandpiper+dsriov", "dsriov-vlm+host-standby", "threshold-migration+cloudscope"),  # policies that compose
)
TERMINAL = {"rejected", "finished", "failed", "expired", "dry-run"}
DURATION = 150


@st.composite
def clusters(draw):
    hosts = draw(st.integers(2, 5))
    vms = draw(st.integers(2, 10))
    host_specs = [
        {"name": f"h{i}", "cores": draw(st.sampled_from([2, 4, 8])), "memory": f"{draw(st.integers(6, 24))}GiB",
         "dom0_memory": "1GiB", "nic": {"max_vfs": draw(st.integers(0, 2))}}
        for i in range(1, hosts + 1)
    ]  # fmt: skip
    vm_specs = [
        {"name": f"v{i}", "host": "auto", "vcpus": draw(st.integers(1, 2)), "memory": f"{draw(st.integers(1, 4))}GiB"}
        for i in range(1, vms + 1)
    ]
    workloads = [
        {"vm": f"v{i}", "kind": "lookbusy", "duty": draw(st.sampled_from([0.3, 0.7, 1.0])), "util": 1.0}
        for i in range(1, vms + 1)
        if draw(st.booleans())
    ]
    names = [v["name"] for v in vm_specs]
    rules = []
    for n in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["affinity", "anti-affinity", "off-hosts", "on-hosts"]))
        members = draw(st.lists(st.sampled_from(names), min_size=2, max_size=3, unique=True))
        rule = {"name": f"r{n}", "kind": kind, "vms": members, "strength": draw(st.sampled_from(["must", "should"]))}
        if kind.endswith("hosts"):
            rule["hosts"] = draw(st.lists(st.sampled_from([h["name"] for h in host_specs]), min_size=1, max_size=2))
        rules.append(rule)
    events = []
    if draw(st.booleans()):
        events.append({"at": 40, "kind": "drain", "host": draw(st.sampled_from([h["name"] for h in host_specs]))})
    if draw(st.booleans()):
        crashed = draw(st.sampled_from([h["name"] for h in host_specs]))
        events.append({"at": 60, "kind": "host-crash", "host": crashed})
    for kind, end, at in (("nic-down", "nic-up", 30), ("vf-fail", "vf-recover", 50)):
        if draw(st.booleans()):
            host = draw(st.sampled_from([h["name"] for h in host_specs]))
            events += [{"at": at, "kind": kind, "host": host}, {"at": at + 60, "kind": end, "host": host}]
    if draw(st.booleans()):
        gap = {"kind": "sensor-gap", "host": draw(st.sampled_from([h["name"] for h in host_specs]))}
        events.append({**gap, "at": 70, "duration": draw(st.sampled_from([10, 45]))})  # 45: declared failed
    return host_specs, vm_specs, workloads, rules, events, draw(st.sampled_from(PROFILES))


def run_checked(scenario, profile: str):
    """Run the scenario under the profile, checking the invariants at every step; the runtime."""
    sim = Simulator(scenario)
    policies = build_policies(scenario, scenario.profiles[profile])
    runtime = Runtime(SimDriver(sim), policies, scenario.control, rules=scenario.rules)
    events = EventPlayer(scenario.events, runtime, sim)
    bound = scenario.rules.bind(tuple(sim.vm_names), tuple(sim.host_names))
    runtime.tick()
    while sim.t < scenario.duration - 1e-9:
        sim.step()
        events.tick(scenario.tick)
        runtime.tick()
        check_step(sim, bound, runtime)
    return runtime


def check_step(sim: Simulator, bound, runtime: Runtime) -> None:
    present = sim.vms.present
    assert ((sim.vms.host >= 0) & (sim.vms.host < sim.n_hosts))[present].all()  # on exactly one host each
    held = np.bincount(sim.vms.host[present], weights=sim.vms.memory[present], minlength=sim.n_hosts)
    assert (held <= sim.vms.host_memory + 1e-6).all(), (
        f"memory over capacity at {sim.t}: {held} > {sim.vms.host_memory}"
    )
    vfs = np.bincount(sim.vms.host[present & sim.vms.on_vf], minlength=sim.n_hosts)
    assert (vfs <= sim.vfs.offered).all() and (sim.vfs.used <= sim.vfs.offered).all()
    assert (sim.sensors.gauges["host_util"] <= 1 + 1e-9).all(), (
        f"CPU over capacity at {sim.t}: {sim.sensors.gauges['host_util']}"
    )
    jobs = runtime.executor.queued + runtime.executor.running
    moving = {j.action.vm for j in jobs if isinstance(j.action, (Migrate, RestartVM))}
    moving |= {sim.vm_names[v] for v in np.flatnonzero(sim.faults.vm_down)}
    for broken in bound.violations(np.where(present, sim.vms.host, -1), must_only=True):
        in_transit = broken.rule.kind == "affinity" and not moving.isdisjoint(broken.vms)
        assert in_transit, f"{broken.describe()} at {sim.t:g} s"


def check_audit(runtime: Runtime) -> None:
    """Every proposed action has its outcome in the audit log, or is still with the executor."""
    open_actions = {(job.plan, job.action.describe()) for job in runtime.executor.running + runtime.executor.queued}
    proposed, ended = [], set()
    for e in runtime.audit.entries:
        if e.event == "proposed":
            proposed.append((e.plan, e.action))
        elif e.event in TERMINAL or (e.event == "applied" and e.status != RUNNING):
            ended.add((e.plan, e.action))
    missing = [p for p in proposed if p not in ended and p not in open_actions]
    assert not missing, f"proposed without an outcome: {missing[:5]}"


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(clusters())
def test_random_clusters_keep_capacity_placement_rules_and_the_audit_at_every_step(cluster):
    hosts, vms, workloads, rules, events, profile = cluster
    profiles = {profile: {"policies": [] if profile == "none" else profile.split("+")}}
    try:
        scenario = make_scenario(
            scenario={"duration": DURATION, "seed": 1},
            hosts=hosts,
            vms=vms,
            workloads=workloads,
            rules=rules,
            events=events,
            profiles=profiles,
        )
    except InputError:
        assume(False)  # the draw has no placement (rules or memory): not a cluster to run
        return
    runtime = run_checked(scenario, profile)
    check_audit(runtime)
    done = {e.action.split()[0] for e in runtime.audit.entries if e.event == "finished" and e.status == OK}
    for kind in sorted(done):  # what the draws exercised (--hypothesis-show-statistics)
        event(f"a {kind} completed")
    event(f"{len(rules)} rule(s)")
