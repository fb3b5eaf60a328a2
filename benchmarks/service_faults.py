"""Faults in the middle of plans, counted: the figures of docs/reliability.md.

The service as real processes (tests/chaos_stack.py: nats-server, PostgreSQL, a leader and a standby
manager, a simulated cluster's agents in a network namespace of their own), and `--rounds` rounds of six
faults, each injected while an action is in flight that no earlier fault caught: SIGKILL of the leading manager, of the standby, of
the agents, of nats-server, of PostgreSQL (each started again), and the agents' namespace cut off the bus
until the manager sees every host stale. After each fault: the seconds from its injection until a manager
leads again and every host reports (for a partition, this includes the cut itself, until every host went
stale), and until the actions it caught in flight were answered. At the end, once every action is
answered: actions sent, lost, doubled, and outcomes the manager recorded otherwise than the agent.
Needs root (network namespaces). Usage:

    sudo .venv/bin/python benchmarks/service_faults.py --rounds 5
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
from test_service_faults import FAULTS, inject


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="sova-faults-") as tmp:
        stack = ChaosStack(Path(tmp))
        stack.start()
        seen: set[str] = set()  # each fault waits for an action no earlier fault caught
        try:
            for round_ in range(args.rounds):
                for fault in FAULTS:
                    caught, began = inject(stack, fault, seen)
                    seen |= caught
                    stack.wait(lambda: stack.leader() is not None, "a leader")
                    stack.wait(lambda: stack.health(stack.leader()).get("hosts_reporting") == 4, "4 hosts")
                    row = {"round": round_, "fault": fault, "in_flight": len(caught)}
                    row["recovered_s"] = round(time.monotonic() - began, 1)
                    stack.wait(lambda c=caught: not (c & (stack.in_flight() or c)), "the caught actions answered")
                    row["answered_s"] = round(time.monotonic() - began, 1)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
            cutoff = time.time()  # the managers go on planning: judge what was sent until now
            stack.wait(lambda: stack.in_flight(cutoff) == set(), "every action answered", timeout=300)
            verdict = stack.verdict(cutoff)
        finally:
            stack.stop()
    print(json.dumps(verdict.__dict__))
    print("\n| fault | cases | actions in flight | leader + every host (s) | in-flight answered (s) |")
    print("|---|---|---|---|---|")
    for fault in FAULTS:
        mine = [r for r in rows if r["fault"] == fault]
        print(
            f"| {fault} | {len(mine)} | {sum(r['in_flight'] for r in mine)} | "
            f"{_median_max(r['recovered_s'] for r in mine)} | {_median_max(r['answered_s'] for r in mine)} |"
        )
    print(
        f"\n{len(rows)} faults; {verdict.sent} actions sent, {verdict.answered} answered; lost {verdict.lost}, "
        f"doubled {verdict.doubled}, outcome recorded otherwise than applied {verdict.mismatched}"
    )


def _median_max(values) -> str:
    ordered = sorted(values)
    return f"{ordered[len(ordered) // 2]:.1f} [max {ordered[-1]:.1f}]"


if __name__ == "__main__":
    main()
