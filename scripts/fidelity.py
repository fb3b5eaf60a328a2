"""Run the papers' experiments, keep their metrics in benchmarks/data/fidelity/, and write docs/fidelity.md.

Usage:
    python scripts/fidelity.py                  every experiment, then the document (docs/fidelity.md lists each one's time)
    python scripts/fidelity.py --quick          only the quick ones (those tests/test_fidelity.py re-runs)
    python scripts/fidelity.py --only NAME ...  only these experiments
    python scripts/fidelity.py --render         no runs: the document from the result files as they are
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import time
from pathlib import Path

from sova.model.atomic_file import write_atomically
from sova.report.fidelity.document import (
    DOCUMENT,
    RESULTS,
    Result,
    load_results,
    render,
    save_result,
)
from sova.report.fidelity.paper_runs import cpu_seconds, take_times
from sova.report.fidelity.registry import CLAIMS, EXPERIMENTS, experiment

ROOT = Path(__file__).resolve().parents[1]


def commit() -> str:
    done = subprocess.run(
        ["git", "describe", "--always", "--dirty", "--abbrev=7"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or "unknown"


def run(name: str, revision: str) -> Result:
    started, cpu = time.monotonic(), cpu_seconds()
    take_times()
    metrics = experiment(name).measure(ROOT)
    return Result(
        experiment=name,
        metrics={key: float(value) for key, value in metrics.items()},
        commit=revision,
        measured=datetime.date.today().isoformat(),
        wall_s=time.monotonic() - started,
        cpu_s=cpu_seconds() - cpu,
        scenarios={path: [round(wall, 2), round(cpu, 2), runs] for path, (wall, cpu, runs) in take_times().items()},
    )


def write_document() -> None:
    results = load_results(ROOT, EXPERIMENTS)
    text = render(CLAIMS, EXPERIMENTS, results)
    write_atomically(ROOT / DOCUMENT, text)
    print(f"wrote {DOCUMENT} ({len(results)} of {len(EXPERIMENTS)} experiments measured)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="only the experiments the test re-runs")
    group.add_argument("--only", nargs="+", metavar="NAME", choices=[e.name for e in EXPERIMENTS])
    group.add_argument("--render", action="store_true", help="run nothing; render the document from the results")
    args = ap.parse_args()
    for directory in (ROOT / RESULTS, (ROOT / DOCUMENT).parent):
        directory.mkdir(parents=True, exist_ok=True)
        if not os.access(directory, os.W_OK):
            print(f"error: cannot write to {directory}", file=sys.stderr)
            return 2
    names = [] if args.render else args.only or [e.name for e in EXPERIMENTS if e.quick or not args.quick]
    revision = commit()
    for k, name in enumerate(names, 1):
        print(f"[{k}/{len(names)}] {name} ...", end="", flush=True)
        result = run(name, revision)
        save_result(ROOT, result)
        print(f" {result.wall_s:.1f} s wall, {result.cpu_s:.1f} s CPU", flush=True)
    write_document()
    return 0


if __name__ == "__main__":
    sys.exit(main())
