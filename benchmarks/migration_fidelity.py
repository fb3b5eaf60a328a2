"""Live migration in the simulator against the closed form: a 2 GiB, 1-vCPU VM between two hosts on one
1 Gb/s link (50 µs), dirty rate / bandwidth from 0 to 0.95, writable working set 50 % and 100 % of
memory, QEMU's default downtime limit (300 ms) and 30 ms. The bandwidth is the link's payload rate (the
simulator's protocol efficiency), which is what the migration stream gets on an otherwise idle link.

Usage: python benchmarks/migration_fidelity.py [--json] [--limit SECONDS]
  --json    one JSON list, one object per case (wss, intensity, downtime_limit_s, time_s, bytes, rounds,
            downtime_s, status, and the closed form's figures)
"""

from __future__ import annotations

import argparse
import json
import math

from sova.model.scenario import simulator_defaults
from sova.model.scenario_reader import scenario_from_dict
from sova.sim.engine import Simulator
from sova.sim.migration import closed_form

MEMORY = 2 * 2**30
LINK = 1e9
INTENSITIES = (0.0, 0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95)
WSS_SHARES = (0.5, 1.0)
DOWNTIME_LIMITS = (0.3, 0.03)


def payload_bandwidth() -> float:
    """Bytes/s the migration stream gets on the idle link."""
    return LINK * simulator_defaults()["protocol_efficiency"] / 8


def scenario(intensity: float, wss: float, downtime_limit: float, limit: float):
    raw = {
        "scenario": {"name": "migration-fidelity", "duration": limit, "step": 1.0},
        "topology": {"kind": "single-switch", "link_speed": LINK, "latency_per_hop": 50e-6},
        "hosts": [{"name": "h{i}", "count": 2, "cores": 4, "memory": "8GiB"}],
        "vms": [
            {
                "name": "vm",
                "host": "h1",
                "vcpus": 1,
                "memory": "2GiB",
                "dirty_rate": intensity * payload_bandwidth(),
                "wss": f"{wss * 2048:g}MiB",
            }
        ],
        "simulator": {"migration_downtime_limit": downtime_limit},
        "profiles": {"default": {}},
    }
    return scenario_from_dict(raw, "migration_fidelity")


def run_case(intensity: float, wss: float, downtime_limit: float, limit: float) -> dict:
    sim = Simulator(scenario(intensity, wss, downtime_limit, limit))
    sim.start_migration(0, 1)
    while not sim.migrations.log and sim.t < limit:
        sim.step()
    if not sim.migrations.log:
        sim.cancel_migration(0, "unfinished")
    rec = sim.migrations.log[-1]
    bandwidth = payload_bandwidth()
    ref = closed_form(
        MEMORY,
        intensity * bandwidth,
        bandwidth,
        bandwidth * downtime_limit,
        0,
        sim.params["migration_resume_time"],
        wss * MEMORY,
    )
    return {
        "wss": wss,
        "intensity": intensity,
        "downtime_limit_s": downtime_limit,
        "time_s": rec.finished - rec.started,
        "bytes": rec.bytes,
        "rounds": rec.rounds,
        "downtime_s": rec.downtime,
        "status": rec.status,
        "closed_form": {
            "time_s": _finite(ref.total_time),
            "bytes": _finite(ref.data),
            "rounds": _finite(ref.rounds),
            "downtime_s": _finite(ref.downtime),
        },
    }


def _finite(value: float) -> float | None:
    return None if math.isinf(value) else value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON list instead of a table")
    parser.add_argument("--limit", type=float, default=3600.0, help="simulated seconds before a case is cut off")
    args = parser.parse_args()
    cases = [run_case(i, w, d, args.limit) for d in DOWNTIME_LIMITS for w in WSS_SHARES for i in INTENSITIES]
    if args.json:
        print(json.dumps(cases, indent=1))
        return
    print(f"2 GiB VM, 1 Gb/s link ({payload_bandwidth() / 1e6:.1f} MB/s payload); simulator | closed form")
    print("| downtime limit | WSS | D/B | time (s) | GiB sent | rounds | downtime (ms) | status |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for c in cases:
        ref = c["closed_form"]
        print(
            f"| {c['downtime_limit_s'] * 1e3:.0f} ms | {c['wss']:.0%} | {c['intensity']:.2f} "
            f"| {c['time_s']:.2f} / {ref['time_s']:.2f} | {c['bytes'] / 2**30:.2f} / {ref['bytes'] / 2**30:.2f} "
            f"| {c['rounds']} / {ref['rounds']} | {c['downtime_s'] * 1e3:.1f} / {ref['downtime_s'] * 1e3:.1f} "
            f"| {c['status']} |"
        )


if __name__ == "__main__":
    main()
