"""``sova place``: what a placement algorithm would do with a scenario; nothing is migrated."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from sova.cli.common import add_window_argument, described, out, pairs, toml_value, window_within
from sova.model.schema import InputError, Problem


def add_parser(sub) -> None:
    from sova.experiments.place import algorithms

    pl = sub.add_parser(
        "place",
        help="what a placement algorithm would do with a scenario (nothing is migrated)",
        **described(
            "Measure SCENARIO for --window simulated seconds with no policy, run a Virtue placement algorithm "
            "on what was measured, and print the objective (the most utilized CPU or link) before and after, "
            "the peak of each resource kind, the moves and the optimizer's runtime. Nothing is migrated.",
            [
                "sova place scenarios/examples/placement-pairs.toml --algorithm greedy-fill",
                "sova place scenarios/examples/placement-pairs.toml --algorithm sa-all --param steps=50000",
            ],
            "docs/placement.md describes the algorithms and their parameters.",
        ),
    )
    pl.add_argument("scenario", type=Path, metavar="SCENARIO.toml", help="scenario file (needs a tree [topology])")
    pl.add_argument("--algorithm", required=True, choices=algorithms(), help="the placement algorithm")
    add_window_argument(pl)
    pl.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="an algorithm parameter")


def command(args) -> int:
    from sova.cli.run import load
    from sova.experiments.place import place

    sweep, runs = load(args.scenario)
    if sweep is not None:
        raise InputError([_sweep_problem(args.scenario, sweep)])
    window_within(args.window, runs[0], args.scenario)
    params = {k: toml_value(v) for k, v in pairs(args.param, "--param", "KEY=VALUE, e.g. steps=50000")}
    r = place(runs[0], args.algorithm, args.window, params)
    table = Table(title=f"{args.algorithm} on {args.scenario.name} (measured {args.window:g} s)")
    table.add_column("resource")
    table.add_column("now", justify="right")
    table.add_column("after", justify="right")
    table.add_row("objective (max utilization)", f"{r.before:.1%}", f"{r.after:.1%}")
    for kind in r.peaks_before:
        table.add_row(f"peak {kind}", f"{r.peaks_before[kind]:.1%}", f"{r.peaks_after[kind]:.1%}")
    out.print(table)
    for vm, a, b in r.moves:
        out.print(f"  move {vm}: {a} -> {b}", markup=False)
    out.print(f"{len(r.moves)} move(s); optimizer {r.seconds * 1000:.0f} ms; nothing was migrated", markup=False)
    return 0


def _sweep_problem(path: Path, sweep) -> Problem:
    """A sweep file is several scenarios; `sova place` places one: name the file, the sweep and its key."""
    where = "[[sweep]]" if sweep.lockstep else "[sweep]"
    values = ", ".join(str(v) for v in sweep.values[:8]) + (", ..." if len(sweep.values) > 8 else "")
    return Problem(
        f"{path}: {where}",
        f"a sweep of key {sweep.key} (table {sweep.table}) over {len(sweep.values)} values ({values}) cannot be "
        f"placed: `sova place` places one scenario; expected a file without {where} (a copy with {sweep.key} set "
        "to the value to place)",
    )
