"""The docs stay true: the generated scenario reference matches the validator's fields."""

from helpers import ROOT
from sova.model.reference import splice


def test_scenario_reference_is_current():
    doc = (ROOT / "docs" / "scenario-format.md").read_text()
    assert doc == splice(doc), "docs/scenario-format.md is stale: run `make docs`"


def test_every_summary_field_is_documented():
    import json

    from sova.experiments.scenario_runs import run_scenario
    from sova.model.sweep import load_scenario

    outputs = (ROOT / "docs" / "outputs.md").read_text()
    s = load_scenario(ROOT / "scenarios" / "quickstart.toml")
    (result,) = run_scenario(s, ["threshold"])

    placeholders = {"hosts.": "HOST", "intensity.": "VM"}  # maps keyed by a host or VM name

    def keys(d, prefix=""):
        for k, v in d.items():
            name = placeholders.get(prefix, k)
            yield prefix + name
            if isinstance(v, dict):
                yield from keys(v, prefix + name + ".")

    missing = [k for k in keys(json.loads(json.dumps(result.summary))) if f"`{k}`" not in outputs]
    assert not missing, f"summary fields not in docs/outputs.md: {missing}"
