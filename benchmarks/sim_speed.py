"""Simulator speed: simulated seconds per wall second, and peak memory, at data-center sizes.

Mixed workloads on a fat tree: web servers answering external clients, netperf streams from VMs
with SR-IOV VFs at duty cycles to web VMs elsewhere and to the outside, CPU burners, PlanetLab trace
replay and storage IO. One-second steps. Usage:

    python benchmarks/sim_speed.py                 # both sizes
    python benchmarks/sim_speed.py --sizes 100     # 100 hosts / 1,000 VMs only
    python benchmarks/sim_speed.py --loop dsriov-vlm     # the whole MAPE-K loop with the dsriov-vlm policy:
                                                   # simulator, recorder, observe, Knowledge, policy, executor
    python benchmarks/sim_speed.py --storage-step 0.025 [--loop dsriov-vlm]
                                                   # every VM also does IO (fio, depth 4) and the storage
                                                   # subsystem steps every 25 ms, the loop with it
    python benchmarks/sim_speed.py --storage-step 0.025 --slos --loop see
                                                   # and every VM under a storage SLO, SASLO's SEE
                                                   # moving its IO limit every epoch
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from sova.model.scenario_reader import scenario_from_dict
from sova.sim.engine import Simulator

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "planetlab" / "20110303"


def scenario(n_hosts: int, vms_per_host: int = 10, seed: int = 1, storage_step: float = 0.0, slos: bool = False):
    k = 4
    while k**3 // 4 < n_hosts:
        k += 2
    n_vms = n_hosts * vms_per_host
    files = sorted(TRACES.iterdir())[:50] if TRACES.exists() else []
    kinds = n_vms // 5
    workloads = [
        {"vm": "web*", "kind": "httperf", "rate": 300, "page": "32KB", "client": "external"},
        {"vm": "burn*", "kind": "lookbusy", "duty": 0.5, "util": 0.8},
        {"vm": "db*", "kind": "fio", "iops": 200, "size": "16KB"},
    ]
    # netperf pairs between VMs in different parts of the fabric, and some to the outside
    for i in range(1, kinds + 1):
        peer = f"web{(i * 7919) % kinds + 1}" if i % 4 else "external"
        workloads.append({"vm": f"net{i}", "kind": "netperf", "peer": peer, "duty": 0.3, "rate": "500Mbps"})
    for i in range(1, kinds + 1):
        if files:
            workloads.append({"vm": f"pl{i}", "kind": "planetlab", "file": str(files[i % len(files)])})
    raw = {
        "scenario": {"name": f"bench-{n_hosts}", "duration": 3600, "seed": seed},
        "topology": {"kind": "fat-tree", "k": k},
        "hosts": [{"name": "h{i}", "count": n_hosts, "cores": 32, "memory": "256GiB"}],
        "storage": [{"name": "san1"}, {"name": "san2", "device": "disk-array"}],
        "vms": [
            {"name": f"{p}{{i}}", "count": kinds, "vcpus": 2, "memory": "4GiB", "nic": "vf" if p == "net" else "vnic"}
            for p in ("web", "burn", "db", "net", "pl")
        ],
        "workloads": workloads,
    }
    if storage_step:
        raw["simulator"] = {"storage_step": storage_step}
        workloads.append({"vm": "*", "kind": "fio", "iops": 50, "size": "4KB", "iodepth": 4})
    if slos:  # below what each VM's fio asks, so that every limit binds and moves
        raw["slos"] = [{"vm": "*", "throughput": [30, 45]}]
        # SEE against SASLO's own limiter, as in its scenarios: QEMU's refills its bucket at each new limit
        raw.setdefault("simulator", {})["io_limiter"] = "time-stamp"
    return scenario_from_dict(raw)


def measure(
    n_hosts: int, seconds: int, policies: list[str] | None = None, storage_step: float = 0.0, slos: bool = False
) -> dict:
    """Simulated seconds per wall second: the simulator alone, or with `policies` the whole loop as `sova
    run` drives it (step, record, observe every monitor period, Knowledge, the policies, the executor)."""
    from sova.control.profiles import build_policies
    from sova.control.runtime import Runtime
    from sova.drivers.sim import SimDriver
    from sova.experiments.scenario_runs import bind_controllers
    from sova.model.scenario import ProfileSpec
    from sova.sim.recorder import PER_HOST_MAX, Recorder

    t0 = time.perf_counter()
    base = scenario(n_hosts, storage_step=storage_step, slos=slos)
    sim = Simulator(base)
    if policies:
        chosen = build_policies(base, ProfileSpec("bench", tuple(policies)))
        bind_controllers(chosen, base)
        runtime = Runtime(SimDriver(sim), chosen, base.control, "auto", base.topology)
        recorder = Recorder(sim.host_names, len(sim.host_names) <= PER_HOST_MAX)
        runtime.tick()
    setup = time.perf_counter() - t0
    sim.step()  # first step builds routes
    t1 = time.perf_counter()
    for _ in range(round(seconds / sim.dt)):
        sim.step()
        if policies:
            runtime.tick()
            if sim.step_ended:
                recorder.record(sim)
    wall = time.perf_counter() - t1
    return {
        "hosts": n_hosts,
        "vms": sim.n_vms,
        "flows": len(sim.network.flows),
        "setup_s": setup,
        "sim_s_per_wall_s": seconds / wall,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000], help="numbers of hosts (10 VMs each)")
    ap.add_argument("--seconds", type=int, default=300, help="simulated seconds to time")
    ap.add_argument("--loop", nargs="+", metavar="POLICY", help="time the whole loop with these policies")
    ap.add_argument("--storage-step", type=float, default=0.0, help="storage epochs (s), with IO on every VM")
    ap.add_argument("--slos", action="store_true", help="every VM under a storage SLO (with --loop see)")
    args = ap.parse_args()
    print("| hosts | VMs | flows | set-up (s) | simulated s / wall s | peak RSS (MiB) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        r = measure(n, args.seconds, args.loop, args.storage_step, args.slos)
        print(
            f"| {r['hosts']:,} | {r['vms']:,} | {r['flows']:,} | {r['setup_s']:.1f} | "
            f"{r['sim_s_per_wall_s']:,.0f} | {r['peak_rss_mib']:,.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
