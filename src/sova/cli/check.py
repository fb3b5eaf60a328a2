"""``sova validate`` and ``sova policies``: check a scenario, list what a profile can name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
            [
                "sova validate scenarios/quickstart.toml",
                "sova validate scenarios/papers/cloudsim/planetlab.toml --param traces=DIR",
            ],
            "exit status: 0 valid; 2 problems found (each printed); 3 no problem found but that trace files or "
            "sets the scenario reads are not there (public traces kept outside the project): it prints each "
            "absent path, what reads it, where its traces come from and the --param NAME=PATH that points the "
            "scenario at them. What depends on the traces (the VMs a trace set makes, the placement at load, the "
            "traces' contents) is checked once they are there.",
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


NEEDS_TRACES = 3  # exit status of `sova validate` when the scenario's only problem is that its traces are absent


def validate(args) -> int:
    from sova.cli.run import load
    from sova.model.schema import AbsentTraces, InputError
    from sova.sim.engine import Simulator

    try:
        sweep, runs = load(args.scenario, args.param)
    except InputError as exc:
        if exc.problems and all(isinstance(p, AbsentTraces) for p in exc.problems):
            _absent_traces(args, exc.problems)
            return NEEDS_TRACES
        raise
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


def _absent_traces(args, problems: list) -> None:
    """Each absent trace path once: what reads it, where its traces come from, how to point at them."""
    from sova.cli.common import err, pairs, toml_value
    from sova.model.schema import read_toml
    from sova.model.trace_sets import pointing_params, public_source

    declared = read_toml(args.scenario, "a scenario .toml file").get("params", {})
    params = {**declared, **{k: toml_value(v) for k, v in pairs(args.param, "--param", "NAME=VALUE")}}
    readers: dict[str, list[str]] = {}
    for p in problems:
        readers.setdefault(p.path, []).append(p.location.rpartition(": ")[2])
    lines = [
        f"needs traces: {args.scenario}: no problem found but that traces it reads are not there (checked as far "
        "as it can be without them: the VMs a trace set makes, the placement at load and the traces' contents "
        "are checked once they are there)"
    ]
    for path, wheres in readers.items():
        lines += [f"  not there: {path}", f"    read by: {', '.join(dict.fromkeys(wheres))}"]
        pointing = pointing_params(path, params, args.scenario.parent)
        # the set the path names, or the one the scenario's own value of the parameter names
        if source := public_source(path) or next((public_source(str(declared[n])) for n, _, _ in pointing), ""):
            lines.append(f"    comes from: {source}")
        lines.append(f"    point at it: {_point_at(path, pointing, params)}")
    for line in lines:
        err.print(line, markup=False, highlight=False, soft_wrap=True)


def _point_at(path: str, pointing: list[tuple[str, Any, Path]], params: dict[str, Any]) -> str:
    """The --param NAME=PATH that reads an absent path from elsewhere (the nearest parameter holding it); or,
    when that parameter's value is there but not the rest of the path, the other parameters the rest names."""
    if not pointing:
        return "the path is written in the scenario (no [params] value holds it); correct it there"
    name, value, rest = pointing[0]
    if rest.parts and Path(path).parents[len(rest.parts) - 1].exists():
        named = [f"{n} (now {v!r})" for n, v in params.items() if n != name and str(v) in rest.parts]
        return f"{name} = {value!r} is there but holds no {rest}" + (f": check {', '.join(named)}" if named else "")
    if str(value).endswith(".tar.gz"):
        placeholder = "ARCHIVE.tar.gz"
    else:
        placeholder = "FILE" if not rest.parts and Path(value).suffix else "DIR"
    holding = f", {placeholder} holding {rest}" if rest.parts else ""
    return f"--param {name}={placeholder}{holding} (now {value!r})"


def policies() -> int:
    """Every registered policy with the analyzers it plans from and its parameters in aligned columns, then
    the built-in profiles."""
    from sova.control.manage import BUILTIN_PROFILES
    from sova.plan.base import registry

    tables = [
        (
            f"{name} ({cls.loop} loop): {cls.summary}"
            + (f"; plans from the findings of {', '.join(cls.analyzers)}" if cls.analyzers else ""),
            [(k, f.expected(), repr(f.default), f.doc) for k, f in cls.schema.items()],
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
    """A heading and an aligned table; every cell is plain text (brackets are not markup). On a terminal the
    columns fold to its width, the last (the meaning) first, and the alignment across tables (`widths`) is
    given up when it would leave the last column under MEANING_MIN; piped or redirected, nothing is folded
    or cut: each row is one line, for grep and less."""
    from rich.console import Console

    console = out if out.is_terminal else Console(file=out.file, width=UNFOLDED, highlight=False)
    if sum(widths) + 3 * len(columns) + MEANING_MIN > console.width:
        widths = ()
    console.print(Text(title, style="bold"), soft_wrap=True)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for k, column in enumerate(columns):
        table.add_column(column, overflow="fold", min_width=widths[k] if k < len(widths) else None)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)


MEANING_MIN = 30  # on a terminal, the characters a line the last column keeps at least (while it can)
UNFOLDED = 10_000  # the width of output that is not a terminal: wider than any row
