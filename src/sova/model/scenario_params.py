"""Scenario parameters: a ``[params]`` table of names with default values, used as ``${name}`` in any
string of the scenario, and set from the command line (``sova run --param day=20110306``) or swept
(``[sweep] table = "params"``), so that one file describes a study over, say, the days of a trace.

    [params]
    day = "20110303"

    [[workloads]]
    file = "../../../../shared/traces/planetlab/${day}"

A string that is exactly ``${name}`` takes the value with its type (a number stays a number); elsewhere
the value is written into the string. A ``${name}`` the table does not declare, and a value set for a
name it does not declare, are errors naming the place.
"""

from __future__ import annotations

import re
from typing import Any

from sova.model.schema import InputError, Problem

REFERENCE = re.compile(r"\$\{([^}]*)\}")


def apply_params(
    raw: dict[str, Any], source: str, overrides: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the scenario with its [params] table taken out and every ``${name}`` replaced, the values used);
    raises InputError."""
    declared = raw.pop("params", {})
    problems: list[Problem] = []
    if not isinstance(declared, dict):
        raise InputError([Problem(f"{source}: [params]", "expected a table of parameters: name = default value")])
    for name, value in declared.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            problems.append(Problem(f"{source}: [params].{name}", f"expected a string or a number, got {value!r}"))
    for name in overrides or {}:
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none: the scenario has no [params] table"
            problems.append(Problem(f"--param {name}", f"the scenario declares no parameter {name!r}; known: {known}"))
    if problems:
        raise InputError(problems)
    values = {**declared, **(overrides or {})}
    return _substitute(raw, values, source, "", problems), values


def _substitute(value: Any, values: dict[str, Any], source: str, where: str, problems: list[Problem]) -> Any:
    if isinstance(value, dict):
        out = {k: _substitute(v, values, source, f"{where}.{k}" if where else k, problems) for k, v in value.items()}
    elif isinstance(value, list):
        out = [_substitute(v, values, source, f"{where}[{n}]", problems) for n, v in enumerate(value)]
    elif isinstance(value, str) and "${" in value:
        out = _fill(value, values, f"{source}: {where}", problems)
    else:
        return value
    if problems and not where:
        raise InputError(problems)
    return out


def _fill(text: str, values: dict[str, Any], where: str, problems: list[Problem]) -> Any:
    unknown = [name for name in REFERENCE.findall(text) if name not in values]
    if unknown:
        known = ", ".join(sorted(values)) or "none: the scenario has no [params] table"
        problems.append(Problem(where, f"${{{unknown[0]}}} is no parameter of the scenario; known: {known}"))
        return text
    whole = REFERENCE.fullmatch(text)
    if whole:
        return values[whole.group(1)]
    return REFERENCE.sub(lambda m: str(values[m.group(1)]), text)
