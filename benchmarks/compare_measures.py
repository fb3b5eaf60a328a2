"""What benchmarks/compare.py measures: for each measure, the benchmark script it runs, that script's
arguments in a given tree (full size or --quick), and how the figures read from the script's output.

The parsers take a script's whole stdout and read its markdown table, by column name where the script
prints a header: the scripts' output is the same at fc3dd7b (issue 35's base) and now, so one parser reads
both. The loop's policy is the one the Sova paper describes, named `sova` before 3db4f8e and `dsriov-vlm`
since: each tree is given the name its own code knows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

LOAD_COLUMNS = ("case", "hosts", "VMs", "workload entries", "load (s)", "set-up (s)", "total (s)", "peak memory (GiB)")


@dataclass(frozen=True)
class Figure:
    """One number a measure reads from a run: its key, how the table names it, and which way is better."""

    key: str
    label: str
    kind: str  # "speed": higher is better; "time" or "memory": lower is better


@dataclass(frozen=True)
class Sizes:
    """A measure's arguments and title at one size (full, or --quick)."""

    title: str
    args: Callable[[Path, dict], list[str]]  # (tree, options) -> the script's arguments


@dataclass(frozen=True)
class Measure:
    name: str  # what --only names
    script: str  # under <tree>/benchmarks/
    full: Sizes
    quick: Sizes
    figures: tuple[Figure, ...]
    parse: Callable[[str], dict[str, float]]  # the script's stdout -> {figure key: value}
    default: bool = True  # run without --only

    def sizes(self, quick: bool) -> Sizes:
        return self.quick if quick else self.full


class OutputError(ValueError):
    """A benchmark's output lacks what a parser expected."""


def table_rows(out: str, columns: tuple[str, ...] | None = None) -> list[dict[str, str]]:
    """The rows of the markdown table in `out`, as {column: cell}. Columns come from the table's header
    line (the line above a `|---` line), or from `columns` for a script that prints rows without one."""
    lines = [line.strip() for line in out.splitlines()]
    header: list[str] | None = list(columns) if columns else None
    rows = []
    for i, line in enumerate(lines):
        if not line.startswith("|") or line.startswith("|--") or line.startswith("|:"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if columns is None and i + 1 < len(lines) and lines[i + 1].startswith(("|--", "|:")):
            header = cells
        elif header is not None and len(cells) == len(header):
            rows.append(dict(zip(header, cells, strict=True)))
    return rows


def number(cell: str) -> float:
    """A table cell's number ('1,072', '0.019', '20.1')."""
    try:
        return float(cell.replace(",", ""))
    except ValueError:
        raise OutputError(f"expected a number, got {cell!r}") from None


def _only_row(out: str, script: str, columns: tuple[str, ...] | None = None, first: str | None = None) -> dict:
    rows = [row for row in table_rows(out, columns) if first is None or next(iter(row.values())) == first]
    if len(rows) != 1:
        tail = "\n".join(out.strip().splitlines()[-5:])
        raise OutputError(
            f"{script}: expected one table row{f' for {first}' if first else ''}, found {len(rows)} in:\n{tail}"
        )
    return rows[0]


def parse_scenario_load(out: str) -> dict[str, float]:
    """scenario_load.py --case NAME prints one row without a header: total seconds and peak GiB."""
    row = _only_row(out, "scenario_load.py", LOAD_COLUMNS)
    return {"total_s": number(row["total (s)"]), "peak_gib": number(row["peak memory (GiB)"])}


def parse_sim_speed(out: str) -> dict[str, float]:
    """sim_speed.py with one size: its simulated seconds per wall second."""
    row = _only_row(out, "sim_speed.py")
    return {"sim_s_per_wall_s": number(_column(row, "simulated s / wall s", "sim_speed.py"))}


def parse_decision_round(out: str) -> dict[str, float]:
    """decision_round.py with one size: the round's seconds (the best of its repeats)."""
    row = _only_row(out, "decision_round.py")
    return {"round_s": number(_column(row, "decision round (s)", "decision_round.py"))}


def parse_planetlab_day(out: str, profile: str = "thr-mmt-0.8") -> dict[str, float]:
    """planetlab_day.py: the profile's wall seconds, from its first step to its summary."""
    row = _only_row(out, "planetlab_day.py", first=profile)
    return {"wall_s": number(_column(row, "wall (s)", "planetlab_day.py"))}


def _column(row: dict[str, str], starts: str, script: str) -> str:
    for column, cell in row.items():
        if column.startswith(starts):
            return cell
    raise OutputError(f"{script}: no column {starts!r} in {list(row)}")


def loop_policy(tree: Path) -> str:
    """The Sova paper's policy under the name `tree` knows: `dsriov-vlm` since 3db4f8e, `sova` before."""
    return "dsriov-vlm" if (tree / "src" / "sova" / "plan" / "dsriov_vlm.py").exists() else "sova"


def _loop(hosts: int, seconds: str | int, *extra: str) -> Callable[[Path, dict], list[str]]:
    """sim_speed.py's arguments for the loop at `hosts`, for `seconds` or as long as the option so named;
    `extra` replaces the loop with the Sova paper's policy (the simulator alone: no extra arguments)."""

    def args(tree: Path, options: dict) -> list[str]:
        timed = options[seconds] if isinstance(seconds, str) else seconds
        chosen = list(extra) if extra else ["--loop", loop_policy(tree)]
        return ["--sizes", str(hosts), *chosen, "--seconds", str(timed)]

    return args


SEE_EVERYWHERE = ("--storage-step", "0.025", "--slos", "--loop", "see")


MEASURES = (
    Measure(
        "load",
        "scenario_load.py",
        Sizes("load dc-100k (10,000 hosts / 100,000 VMs)", lambda tree, options: ["--case", "dc-100k"]),
        Sizes("load opendc-50 (5 hosts / 50 VMs)", lambda tree, options: ["--case", "opendc-50"]),
        (Figure("total_s", "total s", "time"), Figure("peak_gib", "peak GiB", "memory")),
        parse_scenario_load,
    ),
    Measure(
        "loop-1k",
        "sim_speed.py",
        Sizes("loop at 1,000 VMs (100 hosts)", _loop(100, "seconds")),
        Sizes("loop at 100 VMs (10 hosts), 200 s", _loop(10, 200)),
        (Figure("sim_s_per_wall_s", "simulated s / wall s", "speed"),),
        parse_sim_speed,
    ),
    Measure(
        "loop-10k",
        "sim_speed.py",
        Sizes("loop at 10,000 VMs (1,000 hosts)", _loop(1000, "seconds_10k")),
        Sizes("loop at 300 VMs (30 hosts), 100 s", _loop(30, 100)),
        (Figure("sim_s_per_wall_s", "simulated s / wall s", "speed"),),
        parse_sim_speed,
    ),
    Measure(
        "decision",
        "decision_round.py",
        Sizes("decision round, 10,000 hosts / 100,000 VMs", lambda tree, options: ["--hosts", "10000"]),
        Sizes("decision round, 100 hosts / 1,000 VMs", lambda tree, options: ["--hosts", "100"]),
        (Figure("round_s", "s (best of 3)", "time"),),
        parse_decision_round,
    ),
    Measure(
        "planetlab",
        "planetlab_day.py",
        Sizes("PlanetLab day, thr-mmt-0.8 (800 hosts)", lambda tree, options: ["--profiles", "thr-mmt-0.8"]),
        Sizes("PlanetLab day, thr-mmt-0.8 (800 hosts)", lambda tree, options: ["--profiles", "thr-mmt-0.8"]),
        (Figure("wall_s", "wall s", "time"),),
        parse_planetlab_day,
    ),
    # only with --only: the other two cases of issue 31's before/after comparison (docs/benchmarks.md)
    Measure(
        "sim-1k",
        "sim_speed.py",
        Sizes(
            "simulator alone at 1,000 VMs (100 hosts)",
            lambda tree, options: ["--sizes", "100", "--seconds", str(options["seconds"])],
        ),
        Sizes(
            "simulator alone at 100 VMs (10 hosts), 200 s", lambda tree, options: ["--sizes", "10", "--seconds", "200"]
        ),
        (Figure("sim_s_per_wall_s", "simulated s / wall s", "speed"),),
        parse_sim_speed,
        default=False,
    ),
    Measure(
        "storage-see",
        "sim_speed.py",
        Sizes("storage epochs (25 ms) and SEE on every VM, 1,000 VMs", _loop(100, "seconds", *SEE_EVERYWHERE)),
        Sizes("storage epochs (25 ms) and SEE on every VM, 100 VMs, 20 s", _loop(10, 20, *SEE_EVERYWHERE)),
        (Figure("sim_s_per_wall_s", "simulated s / wall s", "speed"),),
        parse_sim_speed,
        default=False,
    ),
)
