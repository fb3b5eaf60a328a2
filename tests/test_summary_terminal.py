"""The terminal summary shows each experiment's own result (found in its results), and "n/a" where a metric has
no value."""

from pathlib import Path

import numpy as np
import pytest

from sova.cli.summary import print_summary
from sova.control.audit import AuditLog
from sova.experiments.scenario_runs import ProfileResult, run_scenario
from sova.model.sweep import load_runs

PAPERS = Path(__file__).resolve().parent.parent / "scenarios" / "papers" / "sova"


def printed(capsys, results, scenario=None) -> str:
    print_summary(results, scenario)
    return capsys.readouterr().out


def run(name: str):
    _, (scenario,) = load_runs(PAPERS / name)
    return scenario, run_scenario(scenario)


def row(text: str, start: str) -> list[str]:
    """The cells of the table row that begins with `start`."""
    line = next(line for line in text.splitlines() if line.startswith(f"│ {start}"))
    return [cell.strip() for cell in line.strip("│").split("│")]


def test_table2_prints_the_vf_holders_of_each_phase(capsys):
    scenario, results = run("table2-vf-scheduling.toml")
    text = printed(capsys, results, scenario)
    assert "SR-IOV VF holders per phase" in text
    # the paper's Table 2, per profile: default hands out no VF
    assert row(text, "0–10 min") == ["0–10 min", "none", "vm1 vm6 vm7 vm8"]
    assert row(text, "10–20 min") == ["10–20 min", "none", "vm1 vm3 vm5 vm6"]
    assert row(text, "20–30 min") == ["20–30 min", "none", "vm1 vm4 vm5 vm6"]


def test_without_the_scenario_the_vf_holders_are_those_at_the_end(capsys):
    _, results = run("table2-vf-scheduling.toml")
    assert row(printed(capsys, results), "0–30 min") == ["0–30 min", "none", "vm1 vm4 vm5 vm6"]


def test_sec53_lists_the_vf_hand_overs_and_the_migration_with_their_times(capsys):
    scenario, results = run("sec53-combination.toml")
    text = printed(capsys, results, scenario)
    assert "VF hand-overs and migrations" in text
    sova_moves = [line for line in text.splitlines() if "│ sova" in line and "migration" in line]
    assert len(sova_moves) == 1 and "VM1" in sova_moves[0] and "HM1 → HM2" in sova_moves[0]
    (migration,) = next(r for r in results if r.profile == "sova").migrations
    assert sova_moves[0].split("│")[2].strip() == f"{migration.started:,.0f}"


def test_table1_prints_each_vms_intensity(capsys):
    scenario, results = run("table1-intensity.toml")
    text = printed(capsys, results, scenario)
    assert "default: intensity of each VM" in text
    cpu_only, netperf = row(text, "vm1 "), row(text, "vm6 ")
    assert float(cpu_only[2]) == 0.0 and float(netperf[1]) > float(cpu_only[1])  # NF 0; IF below netperf's


def test_a_few_services_get_their_own_response_times(capsys):
    services = [{"server": f"web{k}", "response_mean": 0.001 * k, "response_p95": 0.002 * k} for k in (1, 2)]
    result = ProfileResult("p", {"services": {"served": 1.0}}, {"time": np.arange(5.0)}, [], AuditLog(), services)
    assert row(printed(capsys, [result]), "web2") == ["web2", "2.00", "4.00"]


@pytest.mark.parametrize("missing", [None, float("nan")])
def test_a_metric_without_a_value_prints_na(capsys, missing):
    summary = {"services": {"served": 0.0, "response_mean": missing}, "energy_kwh": 1.0}
    base = {"services": {"served": 10.0, "response_mean": 0.001}, "energy_kwh": 1.0}
    results = [ProfileResult(n, s, {"time": np.arange(5.0)}, [], AuditLog()) for n, s in (("a", base), ("b", summary))]
    text = printed(capsys, results)
    assert row(text, "  mean response time") == ["mean response time", "1.00 ms", "n/a", "–"]
    assert "nan" not in text.lower()
