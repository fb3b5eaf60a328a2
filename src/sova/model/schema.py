"""A small declarative reader for TOML tables that collects every error with its location.

Each table is described by a dict of ``Field``s. ``Reader.table`` checks types, units, ranges and
choices, fills defaults, rejects unknown keys (with a did-you-mean hint), refuses NaN and infinity for
every number (TOML has both; no quantity in Sova is meant to be either) and records every problem
as a ``Problem(location, message)`` instead of stopping at the first. The same field descriptions
generate the scenario reference in docs/, so the docs cannot drift from the code.
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sova.model import units


class _Required:
    def __repr__(self) -> str:
        return "required"


REQUIRED: Any = _Required()

_CONVERTERS = {
    "bandwidth": units.bandwidth,
    "size": units.size_bytes,
    "memory": units.memory_mib,
    "duration": units.duration,
}

_KIND_TEXT = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "true or false",
    "bandwidth": "a bandwidth (bit/s or '10Gbps')",
    "size": "a size (bytes or '128KB')",
    "memory": "a memory size (MiB or '4GiB')",
    "duration": "a duration (s or '10min')",
    "list[str]": "a list of strings",
    "table": "a table",
    "any": "a value",
}


@dataclass(frozen=True)
class Field:
    """One key of a table: its kind, default, allowed values and a line of documentation."""

    kind: str
    default: Any = REQUIRED
    doc: str = ""
    choices: tuple[Any, ...] = ()
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    # (low, high) of the values anyone means (None: no end); a value outside is taken, with a warning.
    # Quantities with a unit have one by default (TYPICAL); 0 is never warned of (it is 0 in any unit)
    typical: tuple[float | None, float | None] | None = None

    def typical_range(self) -> tuple[float | None, float | None] | None:
        return self.typical if self.typical is not None else TYPICAL.get(self.kind)

    def expected(self) -> str:
        text = _KIND_TEXT[self.kind]
        if self.choices:
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        bounds = []
        if self.lo is not None:
            bounds.append(f"{'>' if self.lo_open else '>='} {_bound(self.lo, self.kind)}")
        if self.hi is not None:
            bounds.append(f"<= {_bound(self.hi, self.kind)}")
        if bounds:
            text += " " + " and ".join(bounds)
        return text


MAX_SEED = 2**63 - 1  # a seed is stored as a 64-bit integer (Parquet, the service's database)

# Past these, a quantity is beyond any machine of today (2026), most likely a slip of a unit or a digit:
# the fastest Ethernet ports run at 1.6 Tb/s, the largest servers hold ~32 TiB of memory; a year is the
# longest study anyone simulates. Below 1 kb/s or 32 MiB, a bare number was most likely meant in Gb/s or GiB.
MAX_LINK_BPS = 3.2e12
MAX_MEMORY_MIB = 64 * 1024**2
MAX_DURATION_S = 366 * 86400.0
TYPICAL: dict[str, tuple[float | None, float | None]] = {
    "bandwidth": (1e3, MAX_LINK_BPS),
    "memory": (32.0, MAX_MEMORY_MIB),
    "duration": (None, MAX_DURATION_S),
    "size": (None, 2.0**50),  # a PiB
}
UNIT = {"bandwidth": "bit/s", "memory": "MiB", "duration": "s", "size": "bytes"}


def _bound(value: float, kind: str) -> str:
    """A range's end as the reader should type it: an integer key's exactly, a number's short."""
    return str(int(value)) if kind == "int" else f"{value:g}"


@dataclass(frozen=True)
class Problem:
    """One error in an input, with where it is and what was expected."""

    location: str
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


@dataclass(frozen=True)
class AbsentTraces(Problem):
    """Nothing at a trace path the input names: its traces are not there (public traces not downloaded,
    or kept elsewhere), which says nothing against the rest of the input. ``path`` is the one looked at."""

    path: str


class InputError(Exception):
    """Raised with every problem found in an input file; nothing has been run or written."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass
class Reader:
    """Reads tables of one file, accumulating problems."""

    source: str
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)  # valid, but most likely not meant

    def error(self, where: str, message: str) -> None:
        self.problems.append(Problem(self.place(where), message))

    def warn(self, where: str, message: str) -> None:
        self.warnings.append(Problem(self.place(where), message))

    def place(self, where: str) -> str:
        """A problem's location: the file, then the table and key."""
        return f"{self.source}: {where}" if where else self.source

    def entries(self, raw: Any, where: str) -> list[Any]:
        """The entries of an array of tables (`where`: "[[vms]]" ...); anything else is a problem (no entries)."""
        if isinstance(raw, list):
            return raw
        self.error(where, f"expected an array of tables ([[{where.strip('[]')}]]), got {type(raw).__name__}")
        return []

    def value(self, raw: Any, spec: Field, where: str) -> Any:
        """Check and convert one value; on error record it and return the default (or None)."""
        fallback = None if spec.default is REQUIRED else spec.default
        try:
            value = self._convert(raw, spec)
        except (TypeError, ValueError) as exc:
            self.error(where, f"{exc}")
            return fallback
        if isinstance(value, float) and not math.isfinite(value):
            self.error(where, f"got {raw!r}; expected {spec.expected()}, a finite number")
            return fallback
        if spec.choices and value not in spec.choices:
            hint = difflib.get_close_matches(str(value), [str(c) for c in spec.choices], n=1)
            extra = f" (did you mean {hint[0]!r}?)" if hint else ""
            self.error(where, f"got {value!r}; expected {spec.expected()}{extra}")
            return fallback
        if isinstance(value, int | float) and not isinstance(value, bool):
            too_low = spec.lo is not None and (value <= spec.lo if spec.lo_open else value < spec.lo)
            too_high = spec.hi is not None and value > spec.hi
            if too_low or too_high:
                self.error(where, f"got {value!r}; expected {spec.expected()}")
                return fallback
            self._check_typical(value, spec, where)
        return value

    def _check_typical(self, value: float, spec: Field, where: str) -> None:
        """A warning for a value outside the field's typical range (see ``Field.typical``)."""
        span = spec.typical_range()
        if span is None or value == spec.default or value == 0:  # zero is no slip of a unit or a digit
            return
        low, high = span
        if (low is None or value >= low) and (high is None or value <= high):
            return
        bounds = " and ".join(
            f"{op} {units.shown(b, spec.kind)}" for op, b in ((">=", low), ("<=", high)) if b is not None
        )
        unit = UNIT.get(spec.kind)
        hint = f"is the unit right? (a bare number is {unit})" if unit else "is that meant?"
        self.warn(where, f"{units.shown(value, spec.kind)} is outside what is typical ({bounds}); {hint}")

    @staticmethod
    def _convert(raw: Any, spec: Field) -> Any:
        kind = spec.kind
        if kind in _CONVERTERS:
            return _CONVERTERS[kind](raw)
        if kind == "any":
            return raw
        if kind == "bool":
            if not isinstance(raw, bool):
                raise TypeError(f"expected true or false, got {raw!r}")
            return raw
        if kind == "int":
            if isinstance(raw, bool) or not isinstance(raw, int):
                raise TypeError(f"expected an integer, got {raw!r}")
            return raw
        if kind == "float":
            if isinstance(raw, bool) or not isinstance(raw, int | float):
                raise TypeError(f"expected a number, got {raw!r}")
            return float(raw)
        if kind == "str":
            if not isinstance(raw, str):
                raise TypeError(f"expected a string, got {raw!r}")
            return raw
        if kind == "list[str]":
            if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
                raise TypeError(f"expected a list of strings, got {raw!r}")
            return list(raw)
        if kind == "table":
            if not isinstance(raw, dict):
                raise TypeError(f"expected a table, got {raw!r}")
            return raw
        raise AssertionError(kind)

    def table(
        self, raw: Any, fields: dict[str, Field], where: str, *, extra_ok: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """Read a table: every known key checked and converted, defaults filled, unknown keys reported."""
        out: dict[str, Any] = {}
        if not isinstance(raw, dict):
            self.error(where, f"expected a table, got {raw!r}")
            raw = {}
        for key in raw:
            if key not in fields and key not in extra_ok:
                hint = difflib.get_close_matches(key, [*fields, *extra_ok], n=1)
                extra = f"; did you mean {hint[0]!r}?" if hint else ""
                known = ", ".join(sorted([*fields, *extra_ok]))
                self.error(_at(where, key), f"unknown key{extra} (known keys: {known})")
        for key, spec in fields.items():
            if key in raw:
                out[key] = self.value(raw[key], spec, _at(where, key))
            elif spec.default is REQUIRED:
                self.error(_at(where, key), f"missing; expected {spec.expected()}")
                out[key] = None
            else:
                out[key] = spec.default
        return out


def _at(where: str, key: str) -> str:
    """A key's location: [table].key in a file; "--param key" where `where` is an option ending in a space."""
    return f"{where}{key}" if not where or where.endswith(" ") else f"{where}.{key}"


def read_toml(path: Path, expected: str) -> dict[str, Any]:
    """A TOML file as a dict (a byte-order mark, as Windows editors write, is fine); InputError naming the
    file if it is missing, unreadable, not UTF-8 or not TOML. `expected` says what the file should be."""
    if path.is_dir():
        raise InputError([Problem(str(path), f"is a directory; expected {expected}")])
    text = ""
    try:
        text = path.read_text(encoding="utf-8-sig")
        return tomllib.loads(text)
    except FileNotFoundError:
        raise InputError([Problem(str(path), f"no such file; expected {expected}")]) from None
    except OSError as exc:
        raise InputError([Problem(str(path), f"cannot read the file: {exc.strerror or exc}")]) from None
    except UnicodeDecodeError as exc:
        raise InputError([Problem(str(path), f"not UTF-8 text: {exc}")]) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError([Problem(str(path), f"not valid TOML: {exc}{_toml_hint(text, str(exc))}")]) from None


def _toml_hint(text: str, message: str) -> str:
    """What most likely went wrong on the line a TOML error points at, for the slips tomllib words obscurely
    (an unclosed table header reads as "Cannot declare ... twice", an unclosed string as "Illegal character")."""
    found = re.search(r"at line (\d+)", message)
    lines = text.splitlines()
    if found is None or not 0 < int(found.group(1)) <= len(lines):
        return ""
    line = lines[int(found.group(1)) - 1].split("#")[0].strip()
    if line.startswith("[") and not line.rstrip().endswith("]"):
        return f"; the table header {line!r} is not closed: expected ']' at its end"
    if line.count('"') % 2 or line.count("'") % 2:
        return f"; a string on that line is not closed: {line!r}"
    return ""


def markdown_table(fields: dict[str, Field]) -> str:
    """The reference table of a schema, for the docs."""
    lines = ["| key | expected | default | meaning |", "|---|---|---|---|"]
    for key, f in fields.items():
        default = "required" if f.default is REQUIRED else repr(f.default)
        lines.append(f"| `{key}` | {f.expected()} | {default} | {f.doc} |")
    return "\n".join(lines)
