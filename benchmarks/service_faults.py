"""Faults in the middle of plans, counted: the figures of docs/reliability.md.

The service as real processes (tests/chaos_stack.py: nats-server, PostgreSQL, a leader and a standby
manager, a simulated cluster's agents in a network namespace of their own), and `--rounds` rounds of six
faults, each injected while an action is in flight that no earlier fault caught: SIGKILL of the leading manager, of the standby, of
the agents, of nats-server, of PostgreSQL (each started again), and the agents' namespace cut off the bus
until the manager sees every host stale. After each fault, the seconds from its injection until a
manager leads again with every host fresh in its view, until it took a report from every host after the
fault (for a partition, after the cut itself, until every host went stale, and the link's return), and
until the actions the fault caught in flight were answered. At the end, once every action is
answered: actions sent, lost, doubled, and outcomes the manager recorded otherwise than the agent; and
the states the plans ended in (those whose actions a fault caught, and all). With the date, the run's
wall and CPU time and the machine's load average (run_conditions.py). Needs root (network namespaces).
Usage:

    sudo .venv/bin/python benchmarks/service_faults.py --rounds 5 [--json faults.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from chaos_stack import ChaosStack
from run_conditions import RunConditions
from test_service_faults import FAULTS, inject


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows and totals here")
    args = parser.parse_args()
    rows = []
    conditions = RunConditions().start()
    with tempfile.TemporaryDirectory(prefix="sova-faults-") as tmp:
        stack = ChaosStack(Path(tmp))
        stack.start()
        seen: set[str] = set()  # each fault waits for an action no earlier fault caught
        plan_states: dict[str, dict[str, int]] = {}
        try:
            for round_ in range(args.rounds):
                for fault in FAULTS:
                    caught, began = inject(stack, fault, seen)
                    seen |= caught
                    injected_at = time.time() - (time.monotonic() - began)  # on the wall clock
                    row = {"round": round_, "fault": fault, "in_flight": len(caught), "caught": sorted(caught)}
                    row |= _recovery(stack, caught, began, injected_at)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
            cutoff = time.time()  # the managers go on planning: judge what was sent until now
            stack.wait(lambda: stack.in_flight(cutoff) == set(), "every action answered", timeout=300)
            verdict = stack.verdict(cutoff)
            for fault in FAULTS:  # the states the plans of the actions each fault caught ended in
                caught = {a for r in rows if r["fault"] == fault for a in r["caught"]}
                plan_states[fault] = stack.plans_by_state(cutoff, caught)
            plan_states["all"] = stack.plans_by_state(cutoff)
            plan_actions = stack.plan_actions(cutoff)
        finally:
            stack.stop()
            conditions.stop()
    print(json.dumps(verdict.__dict__))
    print(json.dumps(plan_states))
    print(json.dumps(plan_actions, indent=1))
    print("\n| fault | cases | actions in flight | leader + 4 fresh (s) | + every host reported (s) | answered (s) |")
    print("|---|---|---|---|---|---|")
    for fault in FAULTS:
        mine = [r for r in rows if r["fault"] == fault]
        times = " | ".join(_median_max(r[key] for r in mine) for key in ("fresh_s", "recovered_s", "answered_s"))
        print(f"| {fault} | {len(mine)} | {sum(r['in_flight'] for r in mine)} | {times} |")
    print(
        f"\n{len(rows)} faults; {verdict.sent} actions sent, {verdict.answered} answered; lost {verdict.lost}, "
        f"doubled {verdict.doubled}, outcome recorded otherwise than applied {verdict.mismatched}"
    )
    print("\n| plans of | " + " | ".join(STATES) + " |")
    print("|---|" + "---|" * len(STATES))
    for name, counts in plan_states.items():
        print(f"| {name} | " + " | ".join(str(counts.get(state, 0)) for state in STATES) + " |")
    others = {state for counts in plan_states.values() for state in counts} - set(STATES)
    if others:
        print(f"other states: {sorted(others)}")
    print("\n" + conditions.line())
    if args.json:
        summary = {"verdict": verdict.__dict__, "plan_states": plan_states, "plan_actions": plan_actions}
        summary["conditions"] = conditions.summary()
        args.json.write_text(json.dumps({"rows": rows, **summary}, indent=2) + "\n")


def _recovery(stack: ChaosStack, caught: set[str], began: float, injected_at: float) -> dict[str, float]:
    """Seconds from the fault (`began`, monotonic; `injected_at`, the same on the wall clock) until each
    of these first held: a leader and 4 hosts fresh in its view (fresh_s; the reports from before the
    fault stay fresh for 5 s, so this may hold before any host reported again), a leader that took a
    report from every host after the fault (recovered_s), and the actions the fault caught answered."""
    checks = {
        "fresh_s": lambda: (leader := stack.leader()) is not None and stack.health(leader).get("hosts_reporting") == 4,
        "recovered_s": lambda: (
            (leader := stack.leader()) is not None and stack.reported_since(leader, injected_at) == 4
        ),
        "answered_s": lambda: (in_flight := stack.in_flight()) is not None and not caught & in_flight,
    }
    times: dict[str, float] = {}

    def all_held() -> bool:
        for name, check in checks.items():
            if name not in times and check():
                times[name] = round(time.monotonic() - began, 1)
        return len(times) == len(checks)

    stack.wait(all_held, f"recovery ({', '.join(sorted(set(checks) - set(times))) or 'all'})")
    return times


STATES = ("succeeded", "partially-succeeded", "failed", "cancelled", "superseded", "ongoing")


def _median_max(values) -> str:
    ordered = sorted(values)
    return f"{ordered[len(ordered) // 2]:.1f} [max {ordered[-1]:.1f}]"


if __name__ == "__main__":
    main()
