"""What-if forecasts checked in simulation: the simulator against itself at another seed.

For each case, the scenario's profile runs at its own seed to `at` + `horizon` ("what happened"). Its cluster
at `at` is exported as `sova snapshot export` does (the last 10 min of demand at 10 s, the last sample held
past it), and the
what-if's as-is alternative runs from that snapshot over the horizon at seed + 1 ("the forecast"). Both are
measured alike over the horizon (report/what_if_answer.window_quantities): seconds some host was above 90 %
CPU, the hottest host's CPU at the 95th percentile, storage SLO compliance (SC rate, PF ratio), migrations
started and their time, energy. The error is forecast - actual, and relative to actual where it is not 0.
Usage:

    python benchmarks/forecast_check.py                 # the three cases, at the what-if's default step
    python benchmarks/forecast_check.py --step 1        # at 1 s steps
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

from sova.cli.snapshot import demand_file, snapshot_of_run
from sova.experiments.scenario_runs import run_profile
from sova.experiments.what_if import alternatives, run_alternatives, sample_interval
from sova.model.cluster_snapshot import ExportSettings, write_snapshot
from sova.model.sweep import load_scenario
from sova.report.what_if_answer import window_quantities

ROOT = Path(__file__).resolve().parents[1]
INTERVAL = 10.0  # s per demand sample, as `sova snapshot export` takes them by default
CASES = {  # name: (scenario, profile, at, horizon)
    "quickstart": ("scenarios/quickstart.toml", "threshold", 720.0, 900.0),
    "quickstart-unmanaged": ("scenarios/quickstart.toml", "default", 720.0, 900.0),  # hm1 stays hot
    "cloudscope-fig8": ("scenarios/papers/cloudscope/fig8-scheduling.toml", "cloudscope", 600.0, 900.0),
    "saslo-fig6-ssd": ("scenarios/papers/saslo/fig6-ssd.toml", "see", 300.0, 600.0),
}


def check(name: str, step: float | None, place: Path, after: str = "last") -> tuple[dict, dict, float]:
    path, profile, at, horizon = CASES[name]
    scenario = load_scenario(ROOT / path)
    actual_run = run_profile(dataclasses.replace(scenario, duration=at + horizon), profile)
    actual = window_quantities(actual_run, at, at + horizon)
    cpu0 = time.process_time()
    out = place / f"{name}.toml"
    settings = ExportSettings(window=600.0, interval=INTERVAL, after=after, duration=horizon)
    document, demand = snapshot_of_run(scenario, profile, at, out, settings)
    write_snapshot(out, demand_file(out), document, demand)
    snapshot = load_scenario(out)
    as_is = alternatives(snapshot, snapshot.profiles[profile])[-1]  # as-is; nothing where the profile has no policy
    (forecast_run,) = run_alternatives(
        snapshot, [as_is], horizon, seed=scenario.seed + 1, step=step or sample_interval(snapshot)
    )
    forecast = window_quantities(forecast_run, 0.0, horizon)
    return actual, forecast, time.process_time() - cpu0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--step", type=float, default=None, help="the forecast's simulator step (default: 10 s)")
    ap.add_argument("--after", default="last", help="the demand's forecast past the window (default last)")
    args = ap.parse_args()
    print("| case | quantity | actual | forecast | error | relative |")
    print("|---|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="sova-forecast-check-") as place:
        for name in args.cases:
            actual, forecast, cpu = check(name, args.step, Path(place), args.after)
            for key, real in actual.items():
                guess = forecast[key]
                if real is None or guess is None:
                    continue
                error = guess - real
                relative = f"{error / real:+.1%}" if real else "n/a"
                print(f"| {name} | {key} | {real:.4g} | {guess:.4g} | {error:+.4g} | {relative} |", flush=True)
            print(f"<!-- {name}: snapshot and forecast took {cpu:.1f} s CPU -->", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
