"""Sova's CloudSim-compatible PlanetLab study beside CloudSim 3.0.3's own numbers (issue 32): per day and
profile, energy, migrations, SLATAH, PDM and wall time, Sova's and CloudSim's side by side with their ratio.

CloudSim's numbers are data in benchmarks/data/cloudsim-3.0.3-planetlab.csv, written by
benchmarks/cloudsim_reference.sh (CloudSim 3.0.3 built and run on this machine on the same trace files, in the
same listing order). Sova runs scenarios/papers/cloudsim/planetlab-cloudsim.toml for each day and profile
asked that the CSV holds.

Usage:
  python benchmarks/cloudsim_compare.py                                   # every day and profile the CSV has
  python benchmarks/cloudsim_compare.py --days 20110303 --profiles dvfs thr-mmt-0.8 --out compare.md
  python benchmarks/cloudsim_compare.py --jobs 2 --csv benchmarks/data/sova-compatible-planetlab.csv
  python benchmarks/cloudsim_compare.py --from-csv benchmarks/data/sova-compatible-planetlab.csv   # no runs
"""

from __future__ import annotations

import argparse
import csv
import math
import resource
import statistics
import sys
from pathlib import Path

from sova.control.profiles import check_profile
from sova.experiments.parallel import run_all
from sova.experiments.scenario_runs import run_profile
from sova.model.sweep import load_runs

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "papers" / "cloudsim" / "planetlab-cloudsim.toml"
REFERENCE = ROOT / "benchmarks" / "data" / "cloudsim-3.0.3-planetlab.csv"


def cloudsim_migrations(summary: dict) -> float:
    """Migrations as CloudSim counts them: Sova's, plus the moves a round planned for a VM already placed by
    that round, which CloudSim migrates and counts again (Sova moves the VM once, to where it ends)."""
    merged = summary.get("policy_counts", {}).get("power-aware", {}).get("moves_merged", 0)
    return float(summary["migrations"]["count"] + merged)


# (what, CloudSim's column, Sova's value from its summary): the quantities compared
COMPARED = (
    ("energy (kWh)", "energy_kwh", lambda summary: summary["energy_kwh"]),
    ("migrations", "migrations", cloudsim_migrations),
    ("SLATAH (%)", "slatah_pct", lambda summary: summary["slatah_pooled_pct"]),  # pooled as CloudSim's helper
    ("PDM (%)", "pdm_pct", lambda summary: summary["pdm_pooled_pct"]),
    ("wall (s)", "wall_s", lambda summary: summary["wall_seconds"]),
)


def reference(path: Path) -> dict[tuple[str, str], dict[str, float]]:
    """CloudSim's rows by (day, profile)."""
    with path.open(newline="") as handle:
        return {(row["day"], row["profile"]): row for row in csv.DictReader(handle)}


def sova_row(summary: dict) -> dict[str, float]:
    return {column: float(value(summary)) for _, column, value in COMPARED}


def ratio(ours: float, theirs: float) -> str:
    if theirs == 0:
        return "=" if ours == 0 else "-"
    return f"{ours / theirs:.3f}"


def table(rows: list[tuple[str, str, dict, dict]]) -> str:
    head = "| day | profile | " + " | ".join(f"{what}: Sova / CloudSim / ratio" for what, _, _ in COMPARED) + " |"
    lines = [head, "|---|---|" + "---:|" * len(COMPARED)]
    for day, profile, ours, theirs in rows:
        cells = []
        for _, column, _ in COMPARED:
            mine, other = ours[column], float(theirs[column])
            cells.append(f"{mine:.4g} / {other:.4g} / {ratio(mine, other)}")
        lines.append(f"| {day} | {profile} | " + " | ".join(cells) + " |")
    speed = [float(theirs["wall_s"]) / ours["wall_s"] for _, _, ours, theirs in rows if ours["wall_s"] > 0]
    if speed:
        median = sorted(speed)[len(speed) // 2]
        lines.append(
            f"\nCloudSim's wall time over Sova's, per run: median {median:.1f}x ({min(speed):.1f}-{max(speed):.1f}x)"
        )
    return "\n".join(lines)


def _run(item: tuple[str, str]) -> tuple[str, str, dict[str, float]]:
    """Sova's compatible study for one day and profile (a process of its own with --jobs)."""
    day, profile = item
    scenario = load_runs(SCENARIO, check_profile, {"day": day})[1][0]
    return day, profile, sova_row(run_profile(scenario, profile).summary)


def targets(rows: list[tuple[str, str, dict, dict]]) -> str:
    """How the runs stand against issue 32's targets: each (day, profile) within 5 % on energy and 10 % on
    migrations and SLATAH; per quantity, the median over days of each profile's ratio."""
    limits = {"energy_kwh": 0.05, "migrations": 0.10, "slatah_pct": 0.10}
    lines = ["", "| quantity | target | within | median ratio | range |", "|---|---|---:|---:|---|"]
    for column, limit in limits.items():
        ratios = [ours[column] / float(theirs[column]) for _, _, ours, theirs in rows if float(theirs[column]) > 0]
        if not ratios:
            continue
        inside = sum(abs(value - 1) <= limit for value in ratios)
        ordered = sorted(ratios)
        lines.append(
            f"| {column} | {limit:.0%} | {inside} of {len(ratios)} | {ordered[len(ordered) // 2]:.3f} "
            f"| {ordered[0]:.3f}-{ordered[-1]:.3f} |"
        )
    return "\n".join(lines)


def medians(rows: list[tuple[str, str, dict, dict]]) -> str:
    """Per profile, the median over the days of energy, migrations and SLATAH, Sova's and CloudSim's, with
    their ratio (issue 32: within 2 %)."""
    columns = ("energy_kwh", "migrations", "slatah_pct")
    profiles = list(dict.fromkeys(profile for _, profile, _, _ in rows))
    days = len({day for day, _, _, _ in rows})
    head = " | ".join(f"{column}: Sova / CloudSim / ratio" for column in columns)
    lines = ["", f"Medians over {days} days:", "", f"| profile | {head} |", "|---|" + "---:|" * len(columns)]
    within = dict.fromkeys(columns, 0)
    for profile in profiles:
        cells = []
        for column in columns:
            ours = statistics.median(o[column] for _, p, o, _ in rows if p == profile)
            theirs = statistics.median(float(t[column]) for _, p, _, t in rows if p == profile)
            cells.append(f"{ours:.4g} / {theirs:.4g} / {ratio(ours, theirs)}")
            within[column] += theirs == ours or (theirs > 0 and abs(ours / theirs - 1) <= 0.02)
        lines.append(f"| {profile} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Within 2 %: " + ", ".join(f"{column} {count} of {len(profiles)}" for column, count in within.items()))
    return "\n".join(lines)


def saved(paths: list[Path], wanted: set[tuple[str, str]]) -> list[tuple[str, str, dict[str, float]]]:
    """Sova's numbers as --csv wrote them, for the days and profiles wanted that they hold."""
    found = []
    for path in paths:
        with path.open(newline="") as handle:
            for row in csv.DictReader(handle):
                if (row["day"], row["profile"]) in wanted:
                    ours = {column: float(row[f"sova_{column}"]) for _, column, _ in COMPARED}
                    found.append((row["day"], row["profile"], ours))
    return found


def write_csv(path: Path, rows: list[tuple[str, str, dict, dict]]) -> None:
    """Sova's numbers per day and profile, beside CloudSim's (written whole, then moved into place)."""
    partial = path.with_suffix(path.suffix + ".partial")
    with partial.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["day", "profile"] + [f"sova_{column}" for _, column, _ in COMPARED])
        for day, profile, ours, _ in rows:
            writer.writerow([day, profile] + [f"{ours[column]:.6g}" for _, column, _ in COMPARED])
    partial.replace(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", type=Path, default=REFERENCE, help="CloudSim's numbers (CSV)")
    parser.add_argument("--days", nargs="*", help="days to run (default: every day the CSV has)")
    parser.add_argument("--profiles", nargs="*", help="profiles to run (default: every profile the CSV has)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once, each in a process (default 1)")
    parser.add_argument("--out", type=Path, help="also write the table here (Markdown)")
    parser.add_argument("--csv", type=Path, help="also write Sova's numbers here (CSV)")
    parser.add_argument(
        "--from-csv", type=Path, nargs="*", help="print the tables from Sova's numbers written by --csv, without runs"
    )
    args = parser.parse_args()
    if not args.reference.exists():
        print(f"error: {args.reference} does not exist: run benchmarks/cloudsim_reference.sh first", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print(f"error: --jobs must be at least 1, got {args.jobs}", file=sys.stderr)
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
    for path in (args.out, args.csv):
        if path:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.with_suffix(path.suffix + ".partial").touch()  # writable before hours of runs

    def done(count: int) -> None:
        print(f"{count} of {len(wanted)} runs done", file=sys.stderr, flush=True)

    results = (
        saved(args.from_csv, set(wanted)) if args.from_csv else run_all(_run, wanted, workers=args.jobs, done=done)
    )
    rows = [(day, profile, ours, known[(day, profile)]) for day, profile, ours in results]
    text = table(rows) + "\n" + targets(rows) + "\n" + medians(rows)
    text += (
        f"\npeak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB (the parent; --jobs 1: all)"
    )
    print(text)
    if args.out:
        partial = args.out.with_suffix(args.out.suffix + ".partial")
        partial.write_text(text + "\n")
        partial.replace(args.out)
    if args.csv:
        write_csv(args.csv, rows)
    return 0 if all(not math.isnan(r[2]["energy_kwh"]) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
