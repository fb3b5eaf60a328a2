"""The service on a JetStream cluster of three nats-servers, as real processes (two managers on PostgreSQL,
a simulated cluster's agents, every part given all three URLs): a server killed with SIGKILL while an
action is in flight, first the one the leading manager is connected to, then the one leading the actions
stream. The service goes on on the other two: the actions caught in flight are answered while the
server is still down, and once everything has settled nothing is lost, doubled or recorded otherwise than
the agents' ledgers say. Prints how long the failover took."""

from __future__ import annotations

import json
import time
import urllib.request

from chaos_stack import ChaosStack
from sova.service.natsd import NatsServer


def monitor(server: NatsServer, path: str) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.monitor_port}{path}", timeout=2) as answer:
        return json.load(answer)


def holding(stack: ChaosStack, client: str) -> str:
    """The cluster's server (`nats-N`) a named client is connected to."""
    for index, server in enumerate(stack.nats.servers, 1):
        if any(c.get("name") == client for c in monitor(server, "/connz")["connections"]):
            return f"nats-{index}"
    raise AssertionError(f"no server holds a connection named {client}")


def streams(server: NatsServer) -> list[dict]:
    """Every stream (and bucket) as `server` knows it: its name and its cluster (leader, replicas)."""
    details = monitor(server, "/jsz?streams=true")["account_details"]
    return [stream for account in details for stream in account.get("stream_detail", [])]


def stream_leaders(server: NatsServer) -> dict[str, str]:
    """Each stream's leader as `server` knows it ('' while it has none)."""
    return {stream["name"]: stream["cluster"].get("leader", "") for stream in streams(server)}


def whole(stack: ChaosStack) -> bool:
    """Every stream has a leader and, as its leader sees them, two current followers: the cluster can
    lose a server (only a stream's leader knows whether its followers are current)."""
    led, names = set(), set()
    for server in stack.nats.servers:
        for stream in streams(server):
            names.add(stream["name"])
            cluster = stream["cluster"]
            if cluster.get("leader") != server.server_name:
                continue
            followers = cluster.get("replicas", [])
            if len(followers) == 2 and all(p.get("current") and not p.get("offline") for p in followers):
                led.add(stream["name"])
    return bool(names) and led == names


def seconds_until(conditions: dict, timeout: float = 120.0) -> dict[str, float]:
    """Poll every condition together; the seconds each took to hold (from now)."""
    began, took = time.monotonic(), {}
    while len(took) < len(conditions):
        for what, condition in conditions.items():
            if what not in took and condition():
                took[what] = time.monotonic() - began
        assert time.monotonic() - began < timeout, f"waited {timeout:g} s for {set(conditions) - set(took)}"
        time.sleep(0.05)
    return took


def kill_in_flight(stack: ChaosStack, fault: str, caught: set[str]) -> tuple[set[str], str, list[str], dict]:
    """Kill a server (the one the leading manager is connected to, or the one leading the actions stream)
    while an action no earlier fault caught is in flight, wait until its streams have new leaders and the
    actions are answered, with the server still down, then start it again. The actions caught, the server's
    name, the streams it led, and the seconds each wait took from the kill."""
    stack.wait(lambda: whole(stack), "every stream with a leader and two current followers")
    stack.wait(lambda: bool((stack.in_flight() or set()) - caught), "a new action in flight")
    in_flight = stack.in_flight() - caught
    if fault == "manager":
        name = holding(stack, f"sova-manager-{stack.leader()}")
    else:
        name = f"nats-{stream_leaders(stack.nats.servers[0])['SOVA_ACTIONS'].removeprefix('sova-')}"
    killed = stack._nats_server(name)
    survivor = next(s for s in stack.nats.servers if s is not killed)
    led = [stream for stream, leader in stream_leaders(survivor).items() if leader == killed.server_name]
    stack.kill(name)
    took = seconds_until(
        {
            "led": lambda: all(stream_leaders(survivor)[s] not in ("", killed.server_name) for s in led),
            "answered": lambda: not (stack.in_flight() or set()) & in_flight,
        }
    )
    assert killed.process.poll() is not None  # all that while the server was down
    stack.restart(name)
    stack.wait(lambda: stack.leader() is not None, f"a leader after killing {name}")
    stack.wait(lambda: stack.health(stack.leader()).get("hosts_reporting") == 4, f"4 hosts after killing {name}")
    return in_flight, name, led, took


def test_a_bus_server_killed_in_the_middle_of_a_plan_costs_no_action_and_the_other_two_carry_on(tmp_path):
    stack = ChaosStack(tmp_path, bus_size=3, namespace=False)
    caught: set[str] = set()
    measured = []
    try:
        stack.start()  # inside: what a failed start left running is stopped too
        for fault in ("manager", "actions"):
            in_flight, name, led, took = kill_in_flight(stack, fault, caught)
            caught |= in_flight
            measured.append((name, led, len(in_flight), took))
        cutoff = time.time()
        stack.wait(lambda: stack.in_flight(cutoff) == set(), "every action sent until now answered")
        verdict = stack.verdict(cutoff)
    finally:
        stack.stop()
    for name, led, count, took in measured:
        print(
            f"killed {name} (leading {', '.join(led) or 'no stream'}): its streams led again after "
            f"{took['led']:.1f} s, the {count} action(s) caught in flight answered after {took['answered']:.1f} s"
        )
    assert len(caught) >= 2 and verdict.answered >= len(caught)
    assert (verdict.lost, verdict.doubled, verdict.mismatched) == (0, 0, 0), verdict
