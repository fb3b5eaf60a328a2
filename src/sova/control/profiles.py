"""Profiles: named sets of policies with their parameters, validated against the policy registry."""

from __future__ import annotations

import difflib

from sova.model.scenario import ProfileSpec, Scenario
from sova.model.schema import InputError, Reader
from sova.plan.admission_policies import AdmissionPolicy, admission_policies
from sova.plan.base import Policy, registry


def build_policies(scenario: Scenario, profile: ProfileSpec) -> list[Policy]:
    reader = Reader(scenario.source)
    policies = check_profile(reader, profile)
    if reader.problems:
        raise InputError(reader.problems)
    return policies


def build_admission(profile: ProfileSpec) -> AdmissionPolicy:
    """The profile's admission policy (its name was checked with the profile)."""
    return admission_policies()[profile.admission]()


RENAMED = {"vlm": "sandpiper", "sova": "dsriov-vlm"}  # policy names of earlier versions: the error names the new one


def check_profile(
    reader: Reader, prof: ProfileSpec, params_at: str = "[profiles.{profile}.params.{policy}]"
) -> list[Policy]:
    """Build the profile's policies, recording unknown names and bad parameters as problems (located by
    `params_at`: the scenario's table, or e.g. "--param {policy}" for parameters from the command line)."""
    known = registry()
    out = []
    for name in prof.policies:
        cls = known.get(name)
        if cls is None:
            hint = [RENAMED[name]] if name in RENAMED else difflib.get_close_matches(name, known, n=1)
            extra = f" (did you mean {hint[0]!r}?)" if hint else ""
            reader.error(
                f"[profiles.{prof.name}].policies",
                f"unknown policy {name!r}{extra}; known: {', '.join(sorted(known))}",
            )
            continue
        where = params_at.format(profile=prof.name, policy=name)
        params = reader.table(prof.params.get(name, {}), cls.schema, where)
        for low, high in cls.ordered:
            if params[low] is not None and params[high] is not None and params[low] > params[high]:
                reader.error(
                    f"{where}{'' if where.endswith(' ') else '.'}{low}",
                    f"{params[low]!r} is above {high} = {params[high]!r}; expected at most {high}",
                )
        out.append(cls(**params))
    if prof.admission not in admission_policies():
        known_admission = admission_policies()
        hint = difflib.get_close_matches(prof.admission, known_admission, n=1)
        reader.error(
            f"[profiles.{prof.name}].admission",
            f"unknown admission policy {prof.admission!r}{f' (did you mean {hint[0]!r}?)' if hint else ''}; "
            f"known: {', '.join(sorted(known_admission))}",
        )
    for name in prof.params:
        if name not in prof.policies:
            reader.error(
                params_at.format(profile=prof.name, policy=name),
                f"parameters for {name!r}, which the profile does not run"
                + (f" (the policy is now called {RENAMED[name]!r})" if RENAMED.get(name) in prof.policies else ""),
            )
    return out
