"""Helpers shared by tests: small scenarios built in code."""

from __future__ import annotations

from pathlib import Path

from sova.model.scenario import Scenario
from sova.model.scenario_reader import scenario_from_dict

ROOT = Path(__file__).resolve().parents[1]

# two hosts, four VMs on the first (a hotspot), a web service; profiles default and threshold
SMALL = """
[scenario]
name = "small"
duration = 120

[[hosts]]
name = "h{i}"
count = 2
cores = 4

[[vms]]
name = "v{i}"
count = 4
host = "h1"

[[workloads]]
vm = "v*"
kind = "lookbusy"

[[workloads]]
vm = "v1"
kind = "httperf"
rate = 200

[profiles.default]

[profiles.threshold]
policies = ["threshold-migration"]
"""


def make_scenario(**sections) -> Scenario:
    """A scenario from keyword sections, with a one-host default and a 60 s duration."""
    raw = {"scenario": {"name": "t", "duration": 60, "seed": 1}, "hosts": [{"name": "h1"}]}
    for key, value in sections.items():
        if key == "scenario":
            raw["scenario"] = {**raw["scenario"], **value}
        else:
            raw[key] = value
    return scenario_from_dict(raw)
