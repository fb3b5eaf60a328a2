"""What every ``sova`` command shares: the consoles, error lines, and KEY=VALUE arguments."""

from __future__ import annotations

import contextlib
import os

from rich.console import Console
from rich.markup import escape

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
    from sova.experiments.estimate import describe, simulated_steps, wall_seconds
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
    """--window DURATION: how long a scenario is measured with no policy before a command works on it;
    seconds or a duration as a scenario writes one ('90', '10min'). The command checks it against the
    scenario's duration (window_within)."""
    take_negative_values(parser)
    parser.add_argument(
        "--window",
        type=duration(),
        default=60.0,
        metavar="DURATION",
        help="measurement window: seconds or a duration like 10min (default 60)",
    )


def refusal(response, method: str, path: str) -> str:
    """An API's 4xx or 5xx in a line: the call, the status and the API's `detail` (its text if it is no JSON)."""
    try:
        detail = response.json().get("detail", response.text)
    except ValueError:
        detail = response.text
    return f"{method.upper()} {path}: {response.status_code} {detail}"


def add_forecast_horizon_argument(parser) -> None:
    """--forecast-horizon DURATION: how far the manager's forecast of each approve-mode plan looks ahead (0:
    no forecasts)."""
    parser.add_argument(
        "--forecast-horizon",
        type=duration("a number of seconds >= 0", zero=True),
        default=1800.0,
        metavar="DURATION",
        help="approve mode: each plan's forecast looks this far ahead, and is checked over it (default 30 min; "
        "0: no forecasts)",
    )


def duration(expected: str = "a positive number of seconds", zero: bool = False):
    """An argparse type for seconds or a duration as a scenario writes one ('90', '10min'): finite, above 0
    (or at least 0 with `zero`)."""
    import argparse
    import math

    from sova.model import units

    def parse(text: str) -> float:
        try:
            seconds = units.duration(text)
        except ValueError:
            seconds = math.nan
        if not (math.isfinite(seconds) and (seconds >= 0 if zero else seconds > 0)):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r} (or a duration, like '10min')")
        return seconds

    parse.__name__ = expected  # argparse names the type in some messages
    return parse


def take_negative_values(parser) -> None:
    """Let a value that starts with a minus and a digit ("-1min", "-20ms") reach its option's type, which
    refuses it with a message, instead of argparse reading it as an unknown option: Python 3.13's argparse
    does so for any such value; 3.11's only for a plain number, so its matcher is widened here."""
    import re

    parser._negative_number_matcher = re.compile(r"-\.?\d")


def window_within(window: float, scenario, path) -> None:
    """--window no longer than the scenario it measures, or InputError naming both: past its end the run
    measures time the scenario does not describe (its runs stop there), and a huge window would not end."""
    if window > scenario.duration:
        raise InputError(
            [
                Problem(
                    "--window",
                    f"{window:g} s is longer than {path}'s duration of {scenario.duration:g} s ([scenario].duration); "
                    f"expected at most {scenario.duration:g} s",
                )
            ]
        )


DASK_SCHEMES = ("tcp", "tls")  # the ones a Dask distributed scheduler listens on over a network


def cluster_address(text: str) -> str:
    """An argparse type for --cluster: a Dask scheduler's address, SCHEME://HOST:PORT (tcp or tls; a bare
    HOST:PORT is tcp, as Dask reads it); anything else is a usage error saying what was expected."""
    import argparse
    from urllib.parse import urlsplit

    expected = f"a Dask scheduler's address such as tcp://HOST:8786 ({' or '.join(DASK_SCHEMES)}), got {text!r}"
    parts = urlsplit(text if "://" in text else f"tcp://{text}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in DASK_SCHEMES or not parts.hostname or not port:
        raise argparse.ArgumentTypeError(f"expected {expected}")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise argparse.ArgumentTypeError(f"expected {expected} (nothing after the port)")
    return text


cluster_address.__name__ = "a Dask scheduler's address"


def a_path(text: str):
    """An argparse type for a file or directory argument: "" is refused (Path("") would be the current
    directory, which nobody means by an empty argument)."""
    import argparse
    from pathlib import Path

    if not text.strip() or "\0" in text:
        raise argparse.ArgumentTypeError(f"expected a path, got {text!r}")
    return Path(text)


a_path.__name__ = "a path"


@contextlib.contextmanager
def progress_bar(description: str, total: float, quiet: bool = False):
    """A bar on stderr for work of `total` units, gone when it ends; yields update(done)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn(f"[bold]{escape(description)}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True, disable=quiet) as bar:
        task = bar.add_task(description, total=total)
        yield lambda done: bar.update(task, completed=done)
