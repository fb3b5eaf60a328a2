"""What every ``sova`` command shares: the consoles, error lines, and KEY=VALUE arguments."""

from __future__ import annotations

import os

from rich.console import Console

from sova.model.schema import InputError, Problem

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be so that the same clean-up runs."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def error(text: str) -> None:
    """One error line, verbatim: scenario locations contain brackets that must not be read as markup."""
    err.print("error: " + text, markup=False, highlight=False, soft_wrap=True, style="red")


def print_problems(problems: list[Problem]) -> None:
    for p in problems:
        error(str(p))
    err.print(f"{len(problems)} problem(s) found; nothing was run", markup=False, soft_wrap=True)


def described(description: str, examples: list[str] = (), notes: str = "") -> dict:
    """Keyword arguments of an argparse parser: the description wrapped to the terminal, then examples
    (one command a line, kept as written) and notes. Descriptions are not %-formatted: write "%" as is."""
    import argparse
    import shutil
    import textwrap

    width = min(shutil.get_terminal_size().columns, 100) - 2  # as argparse wraps the options
    paragraphs = [textwrap.fill(p, width, break_on_hyphens=False) for p in description.split("\n\n")]
    epilog = ("examples:\n" + "\n".join(f"  {e}" for e in examples)) if examples else ""
    if notes:
        epilog += ("\n\n" if epilog else "") + "\n".join(
            textwrap.fill(p, width, break_on_hyphens=False) for p in notes.split("\n")
        )
    return {
        "description": "\n\n".join(paragraphs),
        "epilog": epilog or None,
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }


def ask_manage(path, request: dict, as_json: bool) -> dict | None:
    """Send a request to a running `sova manage`'s control socket: its answer, printed as JSON when asked;
    None (said on stderr) when it was refused or nobody answered."""
    import json

    from sova.control.slo_service import ask

    answer = ask(path, request)
    if not answer.get("ok"):
        error(answer.get("error", "no answer"))
        return None
    if as_json:
        out.print(json.dumps(answer, indent=2), markup=False)
    return answer


def warn(text: str) -> None:
    err.print("warning: " + text, markup=False, highlight=False, soft_wrap=True, style="yellow")


def before_run(runs, profiles: list[str], jobs: int | None = None) -> None:
    """Warnings for values that are valid but most likely mistakes, and the run time when it is long
    (trials in `jobs` processes, by default one per core, as `sova run` does)."""
    from sova.control.estimate import describe, simulated_steps, wall_seconds
    from sova.model.plausibility import warnings

    seen = set()
    for scenario in runs:
        for w in warnings(scenario):
            text = str(w).replace(scenario.source, scenario.source.split(" [")[0])  # once for all sweep values
            if text not in seen:
                seen.add(text)
                warn(text)
    seconds = wall_seconds(runs, profiles, jobs or os.cpu_count() or 1)
    if seconds > LONG_RUN_SECONDS:
        err.print(
            f"note: this run takes roughly {describe(seconds)} ({simulated_steps(runs, profiles):,} simulated steps "
            f"of up to {max(len(s.vms) for s in runs):,} VMs; estimated from the benchmarks)",
            markup=False,
            soft_wrap=True,
        )


LONG_RUN_SECONDS = 600.0


def pairs(items: list[str], flag: str, expected: str, dotted: bool = False) -> list[tuple[str, str]]:
    """KEY=VALUE arguments as (key, value) pairs; a malformed one is an input error naming the flag."""
    found = []
    for item in items:
        key, sep, val = item.partition("=")
        if not sep or not key or not val or (dotted and "." not in key):
            raise InputError([Problem(flag, f"{item!r}: expected {expected}")])
        found.append((key, val))
    return found


def toml_value(text: str):
    """A command-line value read as TOML would read it (numbers, booleans, durations as strings)."""
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def number(what: str, lo: float | None = None, hi: float | None = None, integer: bool = False, lo_open: bool = False):
    """An argparse type for a finite number in range; a bad value is a usage error that names the range."""
    import argparse
    import math

    def parse(text: str):
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            value = None
        bad = value is None or not math.isfinite(value)
        bad = bad or (lo is not None and (value <= lo if lo_open else value < lo)) or (hi is not None and value > hi)
        if bad:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    parse.__name__ = what  # argparse names the type in some messages
    return parse


def add_window_argument(parser) -> None:
    """--window SECONDS: how long a scenario is measured with no policy before a command works on it."""
    parser.add_argument(
        "--window",
        type=number("a positive number of seconds", lo=0, lo_open=True),
        default=60.0,
        metavar="SECONDS",
        help="measurement window (default 60)",
    )
