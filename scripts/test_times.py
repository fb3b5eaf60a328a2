"""Where `make test`'s time goes: the test suite run as `make test` runs it (the parallel part, then the lab),
with each part's wall time and, per test module, the time its tests took (setup, call and teardown summed;
in the parallel part two workers share the wall time).

Usage: python scripts/test_times.py [--out FILE.md]     (root: the lab part needs it, as make test does)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = [("parallel", ["-n", "auto", "--dist", "worksteal", "-m", "not lab"]), ("lab", ["-m", "lab"])]  # as make test


def run_part(args: list[str], junit: Path) -> tuple[float, int]:
    """One pytest run with a JUnit report: its wall time and exit status."""
    started = time.monotonic()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, f"--junitxml={junit}"]
    done = subprocess.run(command, cwd=ROOT, check=False)
    return time.monotonic() - started, done.returncode


def per_module(junit: Path) -> dict[str, tuple[int, float]]:
    """Per test module: how many tests and the seconds they took."""
    found: dict[str, list[float]] = defaultdict(list)
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")[-1] or "?"
        found[module].append(float(case.get("time", 0.0)))
    return {module: (len(times), sum(times)) for module, times in found.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="also write the tables here (Markdown)")
    args = parser.parse_args()
    lines, failed = [], False
    with tempfile.TemporaryDirectory() as folder:
        for name, part in PARTS:
            junit = Path(folder) / f"{name}.xml"
            wall, status = run_part(part, junit)
            failed |= status not in (0, 5)  # 5: no test collected (no lab without root)
            modules = sorted(per_module(junit).items(), key=lambda item: -item[1][1]) if junit.exists() else []
            lines += [
                f"\n{name} part: {wall:.0f} s wall, exit {status}\n",
                "| module | tests | seconds |",
                "|---|---|---|",
            ]
            lines += [f"| {module} | {count} | {seconds:.1f} |" for module, (count, seconds) in modules]
    text = f"cores: {os.cpu_count()}\n" + "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
