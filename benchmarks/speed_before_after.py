"""The simulator's and the whole loop's speed in this tree against a commit's, in one run: for refactors
that must not slow them down.

Each case runs benchmarks/sim_speed.py of each tree (the commit's in a `git worktree` beside this one,
with its own code), alternating, --repeats times; the table gives each case's median simulated seconds per
wall second and the CPU seconds its runs took (user + system, of the child processes), before and after.

Usage:
  python benchmarks/speed_before_after.py --base 2556e87 [--repeats 3] [--seconds 120]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = {  # what docs/benchmarks.md reports, at 100 hosts / 1,000 VMs
    "simulator": ["--sizes", "100"],
    "loop (dsriov-vlm)": ["--sizes", "100", "--loop", "dsriov-vlm"],
    "storage epochs and SEE": ["--sizes", "100", "--storage-step", "0.025", "--slos", "--loop", "see"],
}


def _run(tree: Path, args: list[str], seconds: int) -> tuple[float, float]:
    """(simulated s per wall s, CPU s) of one sim_speed run of `tree`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    command = [sys.executable, str(tree / "benchmarks" / "sim_speed.py"), "--seconds", str(seconds), *args]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    speed = float(out.strip().splitlines()[-1].split("|")[5].replace(",", ""))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return speed, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the commit to compare with")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each case in each tree")
    parser.add_argument("--seconds", type=int, default=120, help="simulated seconds each run times")
    args = parser.parse_args()
    base = ROOT.parent / f".speed-base-{os.getpid()}"  # beside this tree: ../shared is the same for both
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.base], check=True)
    try:
        print(f"| case | {args.base}: sim s / wall s | this tree | change | CPU s {args.base} | CPU s this tree |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, case in CASES.items():
            runs: dict[Path, list[tuple[float, float]]] = {base: [], ROOT: []}
            for _ in range(args.repeats):
                for tree in runs:
                    runs[tree].append(_run(tree, case, args.seconds))
            old, new = (statistics.median(speed for speed, _ in runs[tree]) for tree in (base, ROOT))
            cpu_old, cpu_new = (sum(cpu for _, cpu in runs[tree]) for tree in (base, ROOT))
            print(
                f"| {name} | {old:,.0f} | {new:,.0f} | {100 * (new / old - 1):+.1f} % | {cpu_old:.0f} | {cpu_new:.0f} |",
                flush=True,
            )
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
