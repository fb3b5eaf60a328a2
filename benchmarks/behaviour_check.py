"""Behaviour before and after a change that must not change it (a refactor): every shipped scenario's summary,
per profile, from the working tree and from a named commit, compared key by key.

Each scenario runs every profile for at most --seconds simulated seconds, or four steps (a sweep: every value; [trials]:
two trials), on the simulator with its seed, in this process; wall times are left out. With --base REV the
same runs are made on a `git worktree` of REV beside this tree (this script, that tree's code: PYTHONPATH=its
src), and every summary value that differs is listed. Scenarios that need public traces not beside the
checkout are skipped, and said so; runs of Model are left out (HiGHS stops at a wall-clock time limit).

Usage:
  python benchmarks/behaviour_check.py --out after.json                  # this tree's summaries
  python benchmarks/behaviour_check.py --base 2ba6331 [--seconds 120]     # this tree against REV
  python benchmarks/behaviour_check.py --against before.json             # against summaries saved before
  python benchmarks/behaviour_check.py --base HEAD --only 'scenarios/papers/cloudsim/*' --seconds 43200
                                                                         # some scenarios, for longer
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WALL = {"wall_seconds", "speed", "seconds", "seconds_median", "seconds_max", "runtime"}  # what a second run changes
# runs whose results hang on the wall clock: Model's HiGHS stops at its time limit wherever it got to
WALL_BOUND = {"model"}


def _api():
    """(load_runs, check_profile, run_scenario, run_trials) from this tree or an older one (before the
    experiments package, they lived in sova.control)."""
    from sova.control.profiles import check_profile
    from sova.model.sweep import load_runs

    try:
        from sova.experiments.scenario_runs import run_scenario
        from sova.experiments.trials import run_trials
    except ImportError:
        from sova.control.experiment import run_scenario
        from sova.control.trials import run_trials
    return load_runs, check_profile, run_scenario, run_trials


def summaries(seconds: float, only: list[str]) -> dict:
    """{scenario file: {run label: summary}} of every shipped scenario that can run here (those whose path
    matches a pattern of `only`, if any)."""
    from sova.model.schema import InputError

    load_runs, check_profile, run_scenario, run_trials = _api()
    found: dict = {}
    for path in sorted((ROOT / "scenarios").rglob("*.toml")):
        name = str(path.relative_to(ROOT))
        if only and not any(fnmatch.fnmatch(name, pattern) for pattern in only):
            continue
        try:
            sweep, runs = load_runs(path, profile_check=check_profile)
        except InputError as exc:  # public traces not here: nothing to compare
            found[name] = {"skipped": str(exc.problems[0])}
            continue
        started = time.process_time()
        for k, scenario in enumerate(runs):
            short = max(seconds, 4 * scenario.step)  # a trace study's steps are minutes long
            scenario = dataclasses.replace(scenario, duration=min(scenario.duration, short))
            label = "" if sweep is None else f"{sweep.key}={sweep.values[k]!r} "
            if scenario.trials is not None:
                scenario = dataclasses.replace(scenario, trials=dataclasses.replace(scenario.trials, count=2))
                for run in run_trials(scenario, jobs=1):
                    profile = scenario.profiles.get(run.profile)  # none for the trial's Random placement
                    if profile is not None and set(profile.policies) & WALL_BOUND:
                        continue
                    found.setdefault(name, {})[f"{label}trial {run.trial} {run.profile} {run.iteration}"] = _plain(
                        dataclasses.asdict(run)
                    )
                continue
            for result in run_scenario(scenario):
                if set(result.summary["policies"]) & WALL_BOUND:
                    continue
                found.setdefault(name, {})[f"{label}{result.profile}"] = _plain(result.summary)
        print(f"{name}: {time.process_time() - started:.1f} s CPU", file=sys.stderr, flush=True)
    return found


def _plain(value):
    """JSON-able, without wall times, NaN as a string (so that NaN equals NaN)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in WALL}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def differences(before, after, path: str = "") -> list[str]:
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for key in sorted(set(before) | set(after), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in before or key not in after:
                out.append(f"{where}: {before.get(key, 'absent')!r} -> {after.get(key, 'absent')!r}")
            else:
                out += differences(before[key], after[key], where)
        return out
    return [] if before == after else [f"{path}: {before!r} -> {after!r}"]


def _at_base(rev: str, seconds: float, only: list[str]) -> dict:
    """The summaries of commit REV, computed in a worktree of it by this same script."""
    with tempfile.TemporaryDirectory() as folder:
        tree = ROOT.parent / f".behaviour-base-{os.getpid()}"  # beside this tree: ../shared is the same for both
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev], check=True)
        try:
            out = Path(folder) / "base.json"
            env = {**os.environ, "PYTHONPATH": str(tree / "src")}
            script = [sys.executable, __file__, "--out", str(out), "--seconds", str(seconds), "--root", str(tree)]
            script += [arg for pattern in only for arg in ("--only", pattern)]
            subprocess.run(script, check=True, env=env)
            return json.loads(out.read_text())
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True)


def main() -> int:
    global ROOT
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write this tree's summaries here")
    parser.add_argument("--base", help="compare with the summaries of this commit")
    parser.add_argument("--seconds", type=float, default=120.0, help="simulated seconds per run at most")
    parser.add_argument("--against", type=Path, help="compare with summaries written before by --out")
    parser.add_argument("--only", action="append", default=[], help="only scenarios whose path matches (a glob)")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)  # the base worktree's
    args = parser.parse_args()
    ROOT = args.root
    after = summaries(args.seconds, args.only)
    if args.out:
        args.out.write_text(json.dumps(after, indent=1, sort_keys=True))
    if args.against:
        before, base = json.loads(args.against.read_text()), str(args.against)
    elif args.base:
        before, base = _at_base(args.base, args.seconds, args.only), args.base
    else:
        return 0
    found = differences(before, after)
    ran = sum(1 for runs in after.values() if "skipped" not in runs)
    print(f"{ran} scenarios run ({len(after) - ran} skipped: public traces absent), "
          f"{sum(len(r) for r in after.values())} runs; {len(found)} values differ from {base}")  # fmt: skip
    for line in found[:200]:
        print("  " + line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
