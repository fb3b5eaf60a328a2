"""What each of CloudSim's semantics does to the PlanetLab study (issue 32's one-switch table): the
compatible set-up (scenarios/papers/cloudsim/planetlab-cloudsim.toml) with one setting at a time turned back
to Sova's own value, its energy and migrations beside the compatible run's, per profile.

Usage:
  python benchmarks/cloudsim_switches.py                                  # 2011-03-03, THR-MMT, MAD-MC, LR-MMT
  python benchmarks/cloudsim_switches.py --day 20110309 --profiles thr-mmt-0.8 --jobs 2 --out switches.md
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Callable
from pathlib import Path

from cloudsim_compare import SCENARIO, cloudsim_migrations
from sova.control.profiles import check_profile
from sova.experiments.parallel import run_all
from sova.experiments.scenario_runs import run_profile
from sova.model.scenario_reader import scenario_from_dict
from sova.model.schema import read_toml

Raw = dict


def _simulator(key: str, value) -> Callable[[Raw], None]:
    def switch(raw: Raw) -> None:
        raw["simulator"][key] = value
        for profile in raw["profiles"].values():
            profile.get("simulator", {}).pop(key, None)

    return switch


def _each(table: str, key: str, value=None) -> Callable[[Raw], None]:
    """Set (or, with None, drop back to its default) `key` in every [[table]] entry."""

    def switch(raw: Raw) -> None:
        for entry in raw[table]:
            if value is None:
                entry.pop(key, None)
            else:
                entry[key] = value

    return switch


def _power_aware(key: str) -> Callable[[Raw], None]:
    """Drop a power-aware parameter back to its default in every profile."""

    def switch(raw: Raw) -> None:
        for profile in raw["profiles"].values():
            profile.get("params", {}).get("power-aware", {}).pop(key, None)

    return switch


def _memory_mib(raw: Raw) -> None:
    """VM and host memory in MiB, as Sova's other scenarios declare it (CloudSim's MB: 4.9 % less)."""
    raw["params"]["host_memory"] = "4096MiB"
    for vms in raw["vms"]:
        vms["memory"] = vms["memory"].replace("MB", "MiB")


def _whole_run(raw: Raw) -> None:
    raw["outputs"].pop("measure_from", None)
    raw["outputs"].pop("measure_to", None)


def _trace_now(raw: Raw) -> None:
    for workload in raw["workloads"]:
        workload.pop("lead", None)
        workload.pop("interpolate", None)


# (what turns back to Sova's value, how)
SWITCHES: list[tuple[str, Callable[[Raw], None]]] = [
    (
        "migration: pre-copy over the NICs (not RAM / (BW / 2), off the network)",
        _simulator("migration_model", "pre-copy"),
    ),
    ("memory in MiB (not CloudSim's MB)", _memory_mib),
    ("running VMs hold their memory (vm_memory = held)", _simulator("vm_memory", "held")),
    ("no VM leaves when its trace idles (leave = never)", _each("workloads", "leave")),
    ("decisions see the period that ended (no lead, samples held)", _trace_now),
    ("idle guests use 0.005 cores (idle_guest_cpu)", _simulator("idle_guest_cpu", 0.005)),
    ("a crowded host's run queue slows its VMs (sched_overhead = 0.065)", _simulator("sched_overhead", 0.065)),
    ("traces by name (order = name)", _each("workloads", "order")),
    ("first fit reserves memory only (reserve = memory)", _each("vms", "reserve")),
    (
        "VMs start where the scenario puts them (initial_placement = scenario)",
        _simulator("initial_placement", "scenario"),
    ),
    ("PABFD's rise from now (rise_from = now)", _power_aware("rise_from")),
    ("a move judged by the detector's limit (after_check = limit)", _power_aware("after_check")),
    ("LR's weighted line (fit = weighted)", _power_aware("fit")),
    ("IQR's interpolated quartiles (quartiles = linear)", _power_aware("quartiles")),
    ("MU's utilisation of a core of the VM's host (mu_of = host)", _power_aware("mu_of")),
    ("energy and SLA over the whole day (no measure window)", _whole_run),
]


def _run(item: tuple[str, str, int]) -> tuple[int, str, dict]:
    day, profile, switch = item
    raw = copy.deepcopy(read_toml(SCENARIO, "a scenario .toml file"))
    if switch >= 0:
        SWITCHES[switch][1](raw)
    scenario = scenario_from_dict(raw, str(SCENARIO), SCENARIO.parent, check_profile, {"day": day})
    summary = run_profile(scenario, profile).summary
    return switch, profile, {"energy": summary["energy_kwh"], "migrations": cloudsim_migrations(summary)}


def table(results: list[tuple[int, str, dict]], profiles: list[str]) -> str:
    base = {profile: row for switch, profile, row in results if switch < 0}
    head = "| turned back to Sova's | " + " | ".join(f"{p}: energy (kWh, %) / migrations (%)" for p in profiles) + " |"
    lines = [head, "|---|" + "---:|" * len(profiles)]
    lines.append(
        "| none: the compatible set-up | "
        + " | ".join(f"{base[p]['energy']:.1f} / {base[p]['migrations']:,.0f}" for p in profiles)
        + " |"
    )
    rows = {(switch, profile): row for switch, profile, row in results}
    for index, (what, _) in enumerate(SWITCHES):
        cells = []
        for profile in profiles:
            row, ref = rows[(index, profile)], base[profile]
            energy = 100 * (row["energy"] / ref["energy"] - 1)
            moves = 100 * (row["migrations"] / ref["migrations"] - 1) if ref["migrations"] else 0.0
            cells.append(f"{row['energy']:.1f} ({energy:+.1f} %) / {row['migrations']:,.0f} ({moves:+.1f} %)")
        lines.append(f"| {what} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--day", default="20110303", help="the PlanetLab day (default 20110303)")
    parser.add_argument("--profiles", nargs="*", default=["thr-mmt-0.8", "mad-mc-2.5", "lr-mmt-1.2"])
    parser.add_argument("--jobs", type=int, default=1, help="runs at once, each in a process (default 1)")
    parser.add_argument("--out", type=Path, help="also write the table here (Markdown)")
    args = parser.parse_args()
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(args.out.suffix + ".partial").touch()  # writable before the runs
    items = [(args.day, profile, switch) for switch in range(-1, len(SWITCHES)) for profile in args.profiles]

    def done(count: int) -> None:
        print(f"{count} of {len(items)} runs done", file=sys.stderr, flush=True)

    text = table(run_all(_run, items, workers=max(args.jobs, 1), done=done), args.profiles)
    print(text)
    if args.out:
        partial = args.out.with_suffix(args.out.suffix + ".partial")
        partial.write_text(text + "\n")
        partial.replace(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
