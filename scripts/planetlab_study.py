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
import statistics
import subprocess
import sys
from pathlib import Path

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
COLUMNS = (  # summary key, column title, format
    ("energy_kwh", "energy (kWh)", "{:.1f}"),
    ("migrations", "migrations", "{:.0f}"),
    ("slatah_pct", "SLATAH (%)", "{:.3f}"),
    ("pdm_pct", "PDM (%)", "{:.5f}"),
    ("slav", "SLAV (x1e-5)", "{:.4f}"),
    ("esv", "ESV (x1e-3)", "{:.4f}"),
    ("host_shutdowns", "host shutdowns", "{:.0f}"),
)
SCALE = {"slav": 1e5, "esv": 1e3}


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
    plot(summaries, args.out / "planetlab-energy-slav.png")
    print(table)
    return 0


def run_day(day: str, out: Path, workers: int) -> int:
    command = [sys.executable, "-m", "sova.cli", "run", str(SCENARIO), "--param", f"day={day}", "--out", str(out)]
    command += ["--workers", str(workers), "--force", "--quiet"]
    return subprocess.run(command, stdout=subprocess.DEVNULL).returncode


def value(profile: dict, key: str) -> float:
    return profile["migrations"]["count"] if key == "migrations" else profile[key]


def median_table(summaries: dict[str, dict]) -> str:
    """Medians over the days per profile (and the days' range of energy)."""
    profiles = list(next(iter(summaries.values())))
    head = "| profile | " + " | ".join(title for _, title, _ in COLUMNS) + " | energy range (kWh) |\n"
    rows = [head, "|---" * (len(COLUMNS) + 2) + "|\n"]
    for name in profiles:
        cells = []
        for key, _, form in COLUMNS:
            median = statistics.median(value(day[name], key) for day in summaries.values())
            cells.append(form.format(median * SCALE.get(key, 1.0)))
        energy = [day[name]["energy_kwh"] for day in summaries.values()]
        rows.append(f"| `{name}` | " + " | ".join(cells) + f" | {min(energy):.1f}-{max(energy):.1f} |\n")
    return "".join(rows)


def plot(summaries: dict[str, dict], path: Path) -> None:
    """Median energy against median SLAV, one point per profile but NPA (its 2,419 kWh would flatten the
    rest), coloured by detector."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    profiles = [name for name in next(iter(summaries.values())) if name != "npa"]
    colours = {}
    for name in profiles:
        detector = name.split("-")[0]
        energy = statistics.median(day[name]["energy_kwh"] for day in summaries.values())
        slav = statistics.median(day[name]["slav"] for day in summaries.values())
        colour = colours.setdefault(detector, f"C{len(colours)}")
        ax.scatter(slav * 1e5, energy, color=colour, label=detector if colours[detector] == colour else None)
        ax.annotate(name, (slav * 1e5, energy), fontsize=7, xytext=(3, 3), textcoords="offset points")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), title="detector", fontsize=8)
    ax.set_xlabel("SLAV (x1e-5), median over the days")
    ax.set_ylabel("energy (kWh), median over the days")
    ax.set_title(f"PlanetLab, {len(summaries)} days: energy against SLA violation (NPA left out)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
