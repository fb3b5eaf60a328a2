"""The scenario's ``[profiles.NAME]`` tables: each profile's policies, mode, parameters, admission policy and
the ``[simulator]`` keys it runs with instead of the scenario's. A profile's name is part of its result files'
names (audit-NAME.jsonl, ...), so it must be one. The policies' names and parameters are checked one floor up
(``sova.control.profiles``), where the policy registry lives."""

from __future__ import annotations

import re
from typing import Any

from sova.model.scenario import ProfileSpec
from sova.model.scenario_fields import PROFILE_FIELDS, SIMULATOR_FIELDS
from sova.model.schema import Reader

PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")  # a profile's name is part of file names


def read_profiles(reader: Reader, raw: Any) -> dict[str, ProfileSpec]:
    if not isinstance(raw, dict):
        reader.error("[profiles]", "expected a table of profiles: [profiles.NAME]")
        return {}
    out = {}
    for name, entry in raw.items():
        if not PROFILE_NAME.fullmatch(name):
            reader.error(
                f"[profiles.{name}]",
                f"{name!r} cannot name the profile's result files (audit-NAME.jsonl, ...): expected letters, digits, "
                "'-', '_', '.' or '+', starting with a letter or digit, at most 64 characters",
            )
        t = reader.table(entry, PROFILE_FIELDS, f"[profiles.{name}]")
        params = t["params"] or {}
        for pol, p in params.items():
            if not isinstance(p, dict):
                reader.error(f"[profiles.{name}.params.{pol}]", "expected a table of parameters")
        out[name] = ProfileSpec(
            name=name,
            policies=tuple(t["policies"] or ()),
            mode=t["mode"] or "auto",
            params={k: v for k, v in params.items() if isinstance(v, dict)},
            admission=t["admission"] or "first-fit",
            simulator=_profile_simulator(reader, t["simulator"] or {}, name),
        )
    if not out:
        out["default"] = ProfileSpec(name="default")
    return out


def _profile_simulator(reader: Reader, raw: Any, profile: str) -> dict[str, Any]:
    """The [simulator] keys a profile sets, checked as [simulator]'s (only those given: the rest are the
    scenario's)."""
    checked = reader.table(raw, SIMULATOR_FIELDS, f"[profiles.{profile}.simulator]")
    return {key: checked[key] for key in raw if key in checked} if isinstance(raw, dict) else {}
