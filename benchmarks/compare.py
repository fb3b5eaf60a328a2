"""This tree against a named commit, in one run, as ratios: so that a change to the simulator or the loop
shows its cost before it lands (issue 35).

Measures (benchmarks/compare_measures.py): a 10,000-host / 100,000-VM scenario's load (scenario_load.py
dc-100k: total seconds and peak GiB), the loop at 1,000 and at 10,000 VMs (sim_speed.py --loop with the
Sova paper's policy: simulated seconds per wall second), a decision round at 10,000 hosts
(decision_round.py) and CloudSim's PlanetLab day with thr-mmt-0.8 (planetlab_day.py: wall seconds).
Two more run only when --only names them: sim-1k (the simulator alone at 1,000 VMs) and storage-see
(storage epochs of 25 ms and SASLO's SEE on every VM), as issue 31's before/after comparison timed.

Each run is one tree's own script on that tree's own code (PYTHONPATH=<tree>/src python
<tree>/benchmarks/X.py), so the workload is that tree's. BASE is checked out by `git worktree add
--detach` in a temporary directory, beside a link to ../shared (where the scripts read their traces),
and removed at the end, after an error or Ctrl-C too. Runs alternate base, tree, base, tree, ...
--repeats times per measure; the table gives each tree's range, the ratio of the medians (tree / base)
and each run's CPU seconds, under the run's conditions (run_conditions.py).

Usage:
  python benchmarks/compare.py BASE [--repeats 3] [--quick] [--json FILE] [--seconds 1200] [--seconds-10k 300]
                               [--only load loop-1k loop-10k decision planetlab sim-1k storage-see]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from compare_measures import MEASURES, Measure, OutputError
from run_conditions import RunConditions
from sova.model.atomic_file import write_atomically as write_text_atomically

ROOT = Path(__file__).resolve().parents[1]
STDERR_TAIL = 20  # lines of a failed child's stderr to show


class CompareError(Exception):
    """What stops a comparison, said for the person who ran it."""


@dataclass
class Tree:
    role: str  # "base" or "tree"
    label: str  # the commit, as the table names it
    path: Path
    runs: dict[str, list[dict]] = field(default_factory=dict)  # measure name -> its runs


def resolve_commit(repo: Path, name: str) -> str:
    """The full hash of commit `name` in `repo`; CompareError naming it if it is not one."""
    found = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if found.returncode != 0 or not found.stdout.strip():
        raise CompareError(f"BASE {name!r} is not a commit of {repo}")
    return found.stdout.strip()


def tree_label(repo: Path) -> str:
    """This tree's commit, short, with '+ changes' when its files differ from it."""
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True)
    return head.stdout.strip() + (" + changes" if dirty.stdout.strip() else "")


def check_writable(path: Path) -> None:
    """CompareError unless a file can be written at `path` (by a temporary file renamed onto it)."""
    if path.is_dir():
        raise CompareError(f"--json {path}: is a directory; expected a file name")
    if not path.parent.is_dir():
        raise CompareError(f"--json {path}: no directory {path.parent}")
    try:
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"):
            pass
    except OSError as error:
        raise CompareError(f"--json {path}: cannot write in {path.parent} ({error.strerror})") from None


def write_atomically(path: Path, data: dict) -> None:
    """`data` as JSON at `path`, whole or not at all (the project's atomic write: a temporary file, renamed)."""
    write_text_atomically(path, json.dumps(data, indent=2) + "\n")


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(tree: Tree, measure: Measure, quick: bool, options: dict) -> dict:
    """One run of `measure` in `tree`: its figures, wall and CPU seconds (of the child, from RUSAGE_CHILDREN)."""
    args = measure.sizes(quick).args(tree.path, options)
    command = [sys.executable, str(tree.path / "benchmarks" / measure.script), *args]
    env = {**os.environ, "PYTHONPATH": str(tree.path / "src")}
    cpu0, wall0 = _cpu_children(), time.monotonic()
    try:
        done = subprocess.run(command, cwd=tree.path, env=env, capture_output=True, text=True, check=True)
    except subprocess.CalledProcessError as error:
        tail = "\n".join(error.stderr.strip().splitlines()[-STDERR_TAIL:])
        raise CompareError(
            f"{measure.name} failed in the {tree.role} tree ({tree.label}, {tree.path}), exit {error.returncode}:\n"
            f"  {' '.join(command)}\n{tail}"
        ) from None
    wall, cpu = time.monotonic() - wall0, _cpu_children() - cpu0
    try:
        figures = measure.parse(done.stdout)
    except OutputError as error:
        raise CompareError(f"{measure.name} in the {tree.role} tree ({tree.label}): {error}") from None
    return {"figures": figures, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "args": args}


def number_text(value: float) -> str:
    """Thousands grouped, else three significant digits (as the scripts print them: 0.3, 0.047, 2.72)."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def cpu_text(seconds: float) -> str:
    return f"{seconds:.0f}" if seconds >= 10 else f"{seconds:.1f}"


def range_text(values: list[float]) -> str:
    low, high = number_text(min(values)), number_text(max(values))
    return low if low == high else f"{low}-{high}"


def ratio_text(ratio: float, kind: str) -> str:
    """tree / base, in words: 'x faster' (or slower) for speeds, 'x the time' or 'x the memory' otherwise."""
    if ratio != ratio:  # NaN: the base's median was 0
        return "n/a (base 0)"
    if kind == "speed":
        return f"{ratio:.2f}x faster" if ratio >= 1 else f"{1 / ratio:.2f}x slower"
    return f"{ratio:.2f}x the {kind}"


def summarise(measures: list[Measure], base: Tree, tree: Tree, quick: bool) -> tuple[list[str], dict]:
    """The markdown table's lines and the figures for --json."""
    lines = [
        f"| measure | base {base.label} (min-max) | tree {tree.label} (min-max) | tree / base (medians) "
        "| CPU s per run, base | CPU s per run, tree |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    results = {}
    for measure in measures:
        title, rows = measure.sizes(quick).title, {}
        cpu = {t.role: ", ".join(cpu_text(run["cpu_s"]) for run in t.runs[measure.name]) for t in (base, tree)}
        for figure in measure.figures:
            values = {t.role: [run["figures"][figure.key] for run in t.runs[measure.name]] for t in (base, tree)}
            medians = {role: statistics.median(v) for role, v in values.items()}
            ratio = medians["tree"] / medians["base"] if medians["base"] else float("nan")
            lines.append(
                f"| {title}: {figure.label} | {range_text(values['base'])} | {range_text(values['tree'])} "
                f"| {ratio_text(ratio, figure.kind)} | {cpu['base']} | {cpu['tree']} |"
            )
            rows[figure.key] = {"label": figure.label, "kind": figure.kind, **values, "medians": medians}
            rows[figure.key]["ratio"] = ratio
        results[measure.name] = {
            "title": title,
            "figures": rows,
            "runs": {t.role: t.runs[measure.name] for t in (base, tree)},
        }
    return lines, results


def add_base_tree(holder: Path, commit: str, label: str) -> Tree:
    """BASE's worktree in the temporary directory `holder`, beside a link to ../shared, as the scripts expect."""
    shared = ROOT.parent / "shared"
    if shared.exists():
        (holder / "shared").symlink_to(shared)
    base = holder / "base"
    added = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), commit], capture_output=True, text=True
    )
    if added.returncode != 0:
        raise CompareError(f"git worktree add of {label} failed: {added.stderr.strip()}")
    return Tree("base", label, base)


def remove_base_tree(holder: Path) -> None:
    """Remove the base worktree and its directory, whatever state they were left in."""
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(holder / "base")], capture_output=True, text=True
    )
    shutil.rmtree(holder, ignore_errors=True)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], capture_output=True, text=True)


def compare(args: argparse.Namespace, commit: str) -> dict:
    measures = [m for m in MEASURES if (m.name in args.only if args.only else m.default)]
    options = {"seconds": args.seconds, "seconds_10k": args.seconds_10k}
    tree = Tree("tree", tree_label(ROOT), ROOT)
    label = commit[:7] if commit.startswith(args.base) else f"{args.base} ({commit[:7]})"
    conditions = RunConditions().start()
    holder = Path(tempfile.mkdtemp(prefix="sova-compare-"))
    try:  # from here on, the base worktree goes whatever happens
        base = add_base_tree(holder, commit, label)
        for measure in measures:
            for repeat in range(1, args.repeats + 1):
                for side in (base, tree):
                    run = run_once(side, measure, args.quick, options)
                    side.runs.setdefault(measure.name, []).append(run)
                    figures = ", ".join(f"{number_text(run['figures'][f.key])} {f.label}" for f in measure.figures)
                    print(
                        f"{measure.name}: {side.role} {side.label}, run {repeat}/{args.repeats}: {figures} "
                        f"({run['wall_s']:.1f} s wall, {run['cpu_s']:.1f} s CPU)",
                        file=sys.stderr,
                        flush=True,
                    )
    finally:
        conditions.stop()
        remove_base_tree(holder)
    lines, results = summarise(measures, base, tree, args.quick)
    smoke = (
        " (--quick: a smoke run, small sizes)"
        if args.quick
        else f" (loops timed over {args.seconds:,} s at 1,000 VMs, {args.seconds_10k:,} s at 10,000)"
    )
    print(f"\n{tree.label} against {base.label}, {args.repeats} run(s) of each, alternating{smoke}:\n")
    print("\n".join(lines))
    print(f"\n{conditions.line()}")
    return {
        "base": {"name": args.base, "commit": commit},
        "tree": tree.label,
        "quick": args.quick,
        "repeats": args.repeats,
        "measures": results,
        "conditions": conditions.summary(),
        "condition_line": conditions.line(),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", metavar="BASE", help="the commit to measure this tree against (e.g. fc3dd7b)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each measure in each tree (default 3)")
    parser.add_argument("--only", nargs="+", choices=[m.name for m in MEASURES], help="these measures only")
    parser.add_argument("--seconds", type=int, default=1200, help="simulated seconds of the loop at 1,000 VMs")
    parser.add_argument("--seconds-10k", type=int, default=300, help="simulated seconds of the loop at 10,000 VMs")
    parser.add_argument("--quick", action="store_true", help="small sizes and few seconds: a smoke run")
    parser.add_argument("--json", type=Path, help="also write every run and figure here")
    args = parser.parse_args(argv)
    for name in ("repeats", "seconds", "seconds_10k"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    return args


def _stop_on_sigterm(signum: int, frame: object) -> None:
    print("compare.py: stopped (SIGTERM); the base worktree is removed", file=sys.stderr)
    raise SystemExit(128 + signum)  # unwinds through compare()'s cleanup, as Ctrl-C does


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        commit = resolve_commit(ROOT, args.base)
        if args.json:
            check_writable(args.json)
        results = compare(args, commit)
        if args.json:
            write_atomically(args.json, results)
    except CompareError as error:
        print(f"compare.py: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("compare.py: interrupted; the base worktree is removed", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
