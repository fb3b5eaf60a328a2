"""Faults in the middle of plans, on the service as real processes: the leading manager, the standby, the
agents, nats-server and PostgreSQL each killed with SIGKILL (and started again), and the agents cut off
the bus by their network namespace's link going down. Every action ends applied once or not at all, the
manager's record agrees with the agents', and the view converges (a leader, every host reporting)."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from chaos_stack import ChaosStack
from postgres_server import binaries
from sova.service import natsd

FAULTS = ("leader", "standby", "agents", "nats", "postgres", "partition")


def inject(stack: ChaosStack, fault: str, caught_before: set[str] = frozenset()) -> tuple[set[str], float]:
    """One fault, injected while an action is in flight (one that no earlier fault caught), then undone;
    the ids of the actions in flight, and when (time.monotonic()) the fault began."""

    def new_in_flight() -> bool:
        in_flight = stack.in_flight()
        return in_flight is not None and bool(in_flight - caught_before)

    stack.wait(new_in_flight, "a new action in flight (the middle of a plan)")
    in_flight = stack.in_flight()
    began = time.monotonic()
    if fault == "partition":
        stack.partition(cut=True)
        stack.wait(lambda: (stack.health(stack.leader() or "m1").get("hosts_reporting") or 0) == 0, "hosts stale")
        stack.partition(cut=False)
        return in_flight, began
    leader = stack.leader()
    name = {"leader": leader, "standby": "m2" if leader == "m1" else "m1"}.get(fault, fault)
    stack.kill(name)
    if fault == "leader":
        stack.wait(lambda: stack.leader() not in (None, leader), "the standby to take over")
    stack.restart(name)
    return in_flight, began


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root for network namespaces")
def test_every_action_ends_applied_once_or_not_at_all_whatever_fails_in_the_middle_of_a_plan(tmp_path):
    if natsd.binary() is None or binaries() is None:
        pytest.skip("needs nats-server and PostgreSQL (as root, `make` installs them)")
    stack = ChaosStack(tmp_path)
    stack.start()
    caught = {}  # the actions each fault caught in flight
    try:
        for fault in FAULTS:
            caught[fault] = inject(stack, fault, set().union(*caught.values()))[0]
            stack.wait(lambda: stack.leader() is not None, f"a leader after the {fault} fault")
            stack.wait(lambda: stack.health(stack.leader()).get("hosts_reporting") == 4, f"4 hosts after {fault}")
        cutoff = time.time()  # the actions sent until now must all be answered
        stack.wait(lambda: stack.in_flight(cutoff) == set(), "every action sent until now answered")
        verdict = stack.verdict(cutoff)
    finally:
        stack.stop()
    assert len(set().union(*caught.values())) >= len(FAULTS)  # each fault caught an action of its own
    assert (verdict.lost, verdict.doubled, verdict.mismatched) == (0, 0, 0), verdict
