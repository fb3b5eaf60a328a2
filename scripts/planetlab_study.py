"""CloudSim's PlanetLab study over its ten days: every profile of scenarios/papers/cloudsim/planetlab.toml
on every day (one ``sova run --workers JOBS`` per day), then the medians over the days per profile as a
Markdown table and a plot of energy against SLAV.

    .venv/bin/python scripts/planetlab_study.py --out results/planetlab --jobs 2

Each day's results stay in OUT/DAY/ (summary.json, metrics, audit), reproducible alone with
``sova run scenarios/papers/cloudsim/planetlab.toml --param day=DAY``. A day already done (its
summary.json exists) is not run again unless --force.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from consolidation_report import median_table, plot

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "papers" / "cloudsim" / "planetlab.toml"
DAYS = (
    "20110303",
    "20110306",
    "20110309",
    "20110322",
    "20110325",
    "20110403",
    "20110409",
    "20110411",
    "20110412",
    "20110420",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "planetlab", help="where each day's results go")
    parser.add_argument("--jobs", type=int, default=2, help="a day's profiles run in this many processes")
    parser.add_argument("--days", nargs="*", default=list(DAYS), help="days to run (default: all ten)")
    parser.add_argument("--force", action="store_true", help="run days whose results exist again")
    args = parser.parse_args()
    unknown = [d for d in args.days if d not in DAYS]
    if unknown or args.jobs < 1:
        parser.error(
            f"unknown day(s) {unknown}; expected some of {' '.join(DAYS)}" if unknown else "--jobs must be >= 1"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    for day in [d for d in args.days if args.force or not (args.out / d / "summary.json").exists()]:
        code = run_day(day, args.out / day, args.jobs)
        print(f"{day}: {'done' if code == 0 else f'failed ({code})'}", flush=True)
        if code:
            return code
    summaries = {d: json.loads((args.out / d / "summary.json").read_text())["profiles"] for d in args.days}
    table = median_table(summaries)
    (args.out / "table.md").write_text(table)
    title = f"PlanetLab, {len(summaries)} days: energy against SLA violation (NPA left out)"
    plot(summaries, args.out / "planetlab-energy-slav.png", title)
    print(table)
    return 0


def run_day(day: str, out: Path, workers: int) -> int:
    command = [sys.executable, "-m", "sova.cli", "run", str(SCENARIO), "--param", f"day={day}", "--out", str(out)]
    command += ["--workers", str(workers), "--force", "--quiet"]
    return subprocess.run(command, stdout=subprocess.DEVNULL).returncode


if __name__ == "__main__":
    raise SystemExit(main())
