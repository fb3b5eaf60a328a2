"""Sova's CloudSim-compatible PlanetLab study beside CloudSim 3.0.3's own numbers (issue 32): per day and
profile, energy, migrations, SLATAH, PDM and wall time, Sova's and CloudSim's side by side with their ratio.

CloudSim's numbers are data in benchmarks/data/cloudsim-3.0.3-planetlab.csv, written by
benchmarks/cloudsim_reference.sh (CloudSim 3.0.3 built and run on this machine on the same trace files, in the
same listing order). Sova runs scenarios/papers/cloudsim/planetlab-cloudsim.toml for each day and profile
asked that the CSV holds.

Usage:
  python benchmarks/cloudsim_compare.py                                   # every day and profile the CSV has
  python benchmarks/cloudsim_compare.py --days 20110303 --profiles dvfs thr-mmt-0.8 --out compare.md
"""

from __future__ import annotations

import argparse
import csv
import math
import resource
import sys
from pathlib import Path

from sova.control.profiles import check_profile
from sova.experiments.scenario_runs import run_profile
from sova.model.sweep import load_runs

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "papers" / "cloudsim" / "planetlab-cloudsim.toml"
REFERENCE = ROOT / "benchmarks" / "data" / "cloudsim-3.0.3-planetlab.csv"
# (what, CloudSim's column, Sova's summary key): the quantities compared
COMPARED = (
    ("energy (kWh)", "energy_kwh", "energy_kwh"),
    ("migrations", "migrations", "migrations.count"),
    ("SLATAH (%)", "slatah_pct", "slatah_pooled_pct"),  # both pooled as CloudSim's helper pools them
    ("PDM (%)", "pdm_pct", "pdm_pooled_pct"),
    ("wall (s)", "wall_s", "wall_seconds"),
)


def reference(path: Path) -> dict[tuple[str, str], dict[str, float]]:
    """CloudSim's rows by (day, profile)."""
    with path.open(newline="") as handle:
        return {(row["day"], row["profile"]): row for row in csv.DictReader(handle)}


def sova_row(summary: dict) -> dict[str, float]:
    row = {}
    for _, _, key in COMPARED:
        value = summary
        for part in key.split("."):
            value = value[part]
        row[key] = float(value)
    return row


def ratio(ours: float, theirs: float) -> str:
    if theirs == 0:
        return "=" if ours == 0 else "-"
    return f"{ours / theirs:.3f}"


def table(rows: list[tuple[str, str, dict, dict]]) -> str:
    head = "| day | profile | " + " | ".join(f"{what}: Sova / CloudSim / ratio" for what, _, _ in COMPARED) + " |"
    lines = [head, "|---|---|" + "---:|" * len(COMPARED)]
    for day, profile, ours, theirs in rows:
        cells = []
        for _, column, key in COMPARED:
            mine, other = ours[key], float(theirs[column])
            cells.append(f"{mine:.4g} / {other:.4g} / {ratio(mine, other)}")
        lines.append(f"| {day} | {profile} | " + " | ".join(cells) + " |")
    speed = [float(theirs["wall_s"]) / ours["wall_seconds"] for _, _, ours, theirs in rows if ours["wall_seconds"] > 0]
    if speed:
        median = sorted(speed)[len(speed) // 2]
        lines.append(
            f"\nCloudSim's wall time over Sova's, per run: median {median:.1f}x ({min(speed):.1f}-{max(speed):.1f}x)"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", type=Path, default=REFERENCE, help="CloudSim's numbers (CSV)")
    parser.add_argument("--days", nargs="*", help="days to run (default: every day the CSV has)")
    parser.add_argument("--profiles", nargs="*", help="profiles to run (default: every profile the CSV has)")
    parser.add_argument("--out", type=Path, help="also write the table here (Markdown)")
    args = parser.parse_args()
    if not args.reference.exists():
        print(f"error: {args.reference} does not exist: run benchmarks/cloudsim_reference.sh first", file=sys.stderr)
        return 2
    known = reference(args.reference)
    wanted = [
        (day, profile)
        for day, profile in known
        if (not args.days or day in args.days) and (not args.profiles or profile in args.profiles)
    ]
    if not wanted:
        print("error: the reference holds none of the days and profiles asked", file=sys.stderr)
        return 2
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.touch()  # writable before hours of runs
    rows, loaded = [], {}
    for day, profile in wanted:
        if day not in loaded:
            loaded[day] = load_runs(SCENARIO, check_profile, {"day": day})[1][0]
        summary = run_profile(loaded[day], profile).summary
        rows.append((day, profile, sova_row(summary), known[(day, profile)]))
        print(f"{day} {profile}: done", file=sys.stderr, flush=True)
    text = table(rows)
    text += f"\npeak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    print(text)
    if args.out:
        partial = args.out.with_suffix(args.out.suffix + ".partial")
        partial.write_text(text + "\n")
        partial.replace(args.out)
    return 0 if all(not math.isnan(r[2]["energy_kwh"]) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
