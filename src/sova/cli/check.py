"""``sova validate`` and ``sova policies``: check a scenario, list what a profile can name."""

from __future__ import annotations

from pathlib import Path

from rich import box
from rich.table import Table
from rich.text import Text

from sova.cli.common import before_run, described, out


def add_parsers(sub) -> None:
    val = sub.add_parser(
        "validate",
        help="check a scenario file and explain every error",
        **described(
            "Check SCENARIO: TOML syntax, every table and key, units, ranges, names that refer to "
            "hosts/VMs/storage, trace files, policies and their parameters. Prints every problem with its "
            "location (file, table, key) and what was expected, then warnings for values that are valid but "
            "most likely mistakes, and how long a run takes when it is long. Nothing is run.",
            ["sova validate scenarios/quickstart.toml"],
        ),
    )
    val.add_argument("scenario", type=Path, metavar="SCENARIO.toml", help="scenario file")
    val.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE", help="set a value of the scenario's [params]"
    )

    sub.add_parser(
        "policies",
        help="list the registered policies and their parameters",
        **described(
            "List every policy a profile can name, with its loop and parameters (kind, range, default, meaning), "
            "and the built-in profiles of sova manage.",
            ["sova policies", "sova policies | less -R"],
        ),
    )


def validate(args) -> int:
    from sova.cli.run import load
    from sova.sim.engine import Simulator

    sweep, runs = load(args.scenario, args.param)
    for s in runs:
        Simulator(s)  # loads traces and builds the fabric: every remaining input error shows here
    s = runs[0]
    swept = f", a sweep of {sweep.key} over {len(runs)} values" if sweep else ""
    out.print(
        f"ok {args.scenario}: {s.name!r}, {len(s.hosts)} hosts, {len(s.vms)} VMs, "
        f"{len(s.workloads)} workloads, profiles: {', '.join(s.profiles)}{swept}",
        markup=False,
        soft_wrap=True,
    )
    before_run(runs, list(s.profiles))
    return 0


def policies() -> int:
    """Every registered policy with the analyzers it plans from and its parameters in aligned columns, then
    the built-in profiles."""
    from sova.control.manage import BUILTIN_PROFILES
    from sova.plan.base import registry

    tables = [
        (
            f"{name} ({cls.loop} loop): {cls.summary}"
            + (f"; plans from the findings of {', '.join(cls.analyzers)}" if cls.analyzers else ""),
            [(k, f.expected(), repr(f.default), f.doc) for k, f in cls.params.items()],
        )
        for name, cls in sorted(registry().items())
    ]
    widths = [max(len(row[i]) for _, rows in tables for row in rows) for i in range(3)]  # one alignment for all
    for title, rows in tables:
        _table(title, ("parameter", "expected", "default", "meaning"), rows, widths)
    _table(
        "built-in profiles (sova manage --profile NAME; a scenario file defines its own in [profiles.NAME])",
        ("profile", "policies"),
        [(name, ", ".join(pols) or "none (observe only)") for name, pols in BUILTIN_PROFILES.items()],
    )
    return 0


def _table(title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]], widths: list[int] = ()) -> None:
    """A heading and an aligned table; every cell is plain text (brackets are not markup)."""
    out.print(Text(title, style="bold"), soft_wrap=True)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for k, column in enumerate(columns):
        table.add_column(column, overflow="fold", min_width=widths[k] if k < len(widths) else None)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    out.print(table)
