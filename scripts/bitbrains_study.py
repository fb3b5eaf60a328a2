"""The consolidation study on Bitbrains: every profile of scenarios/traces/bitbrains-consolidation.toml (Rnd,
500 VMs) or bitbrains-opendc-consolidation.toml (OpenDC's set, 50 VMs) -- CloudSim's NPA, DVFS and
detector x selection pairs beside vlm, sova, greedy-fill and cloudscope -- in one ``sova run --workers
JOBS``, then a Markdown table of CloudSim's metrics (with the busiest link where the traces have network and
disk columns) and a plot of energy against SLAV and SLATAH.

    .venv/bin/python scripts/bitbrains_study.py --out results/bitbrains --jobs 2
    .venv/bin/python scripts/bitbrains_study.py --set opendc --out results/bitbrains-opendc

The run's results stay in OUT/run/ (summary.json, metrics.parquet, audit logs); a run already done (its
summary.json exists) is not run again unless --force. --param NAME=VALUE is passed to sova run
(e.g. duration=1d).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from consolidation_report import COLUMNS, median_table, plot

ROOT = Path(__file__).resolve().parents[1]
SETS = {  # the scenario of each set, and what its plot is called
    "rnd": (ROOT / "scenarios" / "traces" / "bitbrains-consolidation.toml", "Bitbrains Rnd, 500 VMs"),
    "opendc": (ROOT / "scenarios" / "traces" / "bitbrains-opendc-consolidation.toml", "OpenDC's Bitbrains, 50 VMs"),
}
SOVAS_OWN = ("vlm", "sova", "greedy-fill", "cloudscope")
EXTRA = (("network.link_util_max_mean", "busiest link (%)", "{:.1f}"),)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=SETS, default="rnd", help="which traces (default: rnd)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bitbrains", help="where the results go")
    parser.add_argument("--jobs", type=int, default=2, help="profiles run in this many processes")
    parser.add_argument("--param", action="append", default=[], help="NAME=VALUE for the scenario's [params]")
    parser.add_argument("--force", action="store_true", help="run again even if results exist")
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error("--jobs must be >= 1")
    scenario, name = SETS[args.set]
    run = args.out / "run"
    if args.force or not (run / "summary.json").exists():
        command = [sys.executable, "-m", "sova.cli", "run", str(scenario), "--out", str(run), "--force", "--quiet"]
        command += ["--workers", str(args.jobs)] + [f"--param={p}" for p in args.param]
        code = subprocess.run(command).returncode
        if code:
            return code
    summaries = {"run": json.loads((run / "summary.json").read_text())["profiles"]}
    table = median_table(summaries, COLUMNS + (EXTRA if args.set == "rnd" else ()))
    (args.out / "table.md").write_text(table)
    title = f"{name}: energy against SLA violation (NPA left out)"
    plot(summaries, args.out / f"bitbrains-{args.set}-energy-slav.png", title, group)
    print(table)
    return 0


def group(name: str) -> str:
    return "Sova's policies" if name in SOVAS_OWN else name.split("-")[0]


if __name__ == "__main__":
    raise SystemExit(main())
