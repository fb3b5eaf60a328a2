"""Scenario parameters (${name} from [params], --param, a sweep over them), one VM per trace file in
CloudSim's blocks of VM types, and first-fit initial placement."""

from __future__ import annotations

import pytest

from sova.cli import main
from sova.model.schema import InputError
from sova.model.sweep import load_runs

BASE = """
[scenario]
name = "p"
duration = "${minutes}min"

[params]
day = "d1"
minutes = 2

[[hosts]]
name = "h{i}"
count = 3
memory = "4GiB"
dom0_memory = 0

[[vms]]
name = "vm{i}"
files = "traces/${day}"
block = "${block}"
memory = "${memory}"
host = "first-fit"

[[workloads]]
vm = "vm*"
kind = "planetlab"
file = "traces/${day}"
"""


@pytest.fixture
def study(tmp_path):
    """Two days of traces: d1 with 5 files, d2 with 3 (CPU 10 %, 20 %, ... by name)."""
    for day, files in (("d1", 5), ("d2", 3)):
        folder = tmp_path / "traces" / day
        folder.mkdir(parents=True)
        for k in range(files):
            (folder / f"f{k}").write_text(f"{10 * (k + 1)}\n" * 288)
    text = BASE.replace('block = "${block}"', 'block = "1/1"').replace('memory = "${memory}"', 'memory = "1GiB"')
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


def test_params_fill_strings_and_keep_a_whole_reference_typed(study):
    _, (scenario,) = load_runs(study)
    assert scenario.duration == 120  # "${minutes}min" with minutes = 2
    assert [v.name for v in scenario.vms] == ["vm1", "vm2", "vm3", "vm4", "vm5"]  # one per file of d1
    files = scenario.workloads[0].params["file"]
    assert files.endswith("traces/d1")


def test_param_from_the_command_line_overrides_the_default_and_an_unknown_one_is_named(study):
    _, (scenario,) = load_runs(study, params={"day": "d2"})
    assert [v.name for v in scenario.vms] == ["vm1", "vm2", "vm3"]
    with pytest.raises(InputError, match=r"--param month: the scenario declares no parameter 'month'; known: day"):
        load_runs(study, params={"month": "3"})


def test_a_reference_to_an_undeclared_param_names_its_place(study):
    study.write_text(study.read_text().replace('kind = "planetlab"', 'kind = "${kind}"'))
    with pytest.raises(InputError, match=r"workloads\[0\]\.kind: \$\{kind\} is no parameter of the scenario"):
        load_runs(study)


def test_a_sweep_over_a_param_runs_each_day(study):
    study.write_text(study.read_text() + '\n[sweep]\ntable = "params"\nkey = "day"\nvalues = ["d1", "d2"]\n')
    sweep, runs = load_runs(study)
    assert sweep.key == "day" and [len(s.vms) for s in runs] == [5, 3]
    study.write_text(study.read_text().replace('key = "day"', 'key = "week"'))
    with pytest.raises(InputError, match=r"\[sweep\]\.key: the scenario's \[params\] declares no 'week'"):
        load_runs(study)


def test_vms_per_file_come_in_cloudsims_blocks_of_types_each_with_its_own_file(tmp_path, study):
    text = study.read_text().split("[[vms]]")[0]
    for k, memory in ((1, "870MB"), (2, "1740MB")):
        text += f'\n[[vms]]\nname = "vm{{i}}"\nfiles = "traces/${{day}}"\nblock = "{k}/2"\nmemory = "{memory}"\n'
    text += '\n[[workloads]]\nvm = "vm*"\nkind = "planetlab"\nfile = "traces/${day}"\n'
    study.write_text(text)
    _, (scenario,) = load_runs(study)
    # 5 files in 2 blocks of ceil(5 / 2) = 3: vm1-vm3 of the first type, vm4-vm5 of the second
    assert [(v.name, v.memory) for v in scenario.vms] == [
        ("vm1", 870 / 1.048576),
        ("vm2", 870 / 1.048576),
        ("vm3", 870 / 1.048576),
        ("vm4", 1740 / 1.048576),
        ("vm5", 1740 / 1.048576),
    ]
    from sova.sim.engine import Simulator

    sim = Simulator(scenario)
    sim.step()  # the k-th VM replays the k-th file: 10 %, 20 %, ... of its core
    assert sim.last_vm_want.round(2).tolist() == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5], abs=0.01)


def test_files_with_a_count_or_a_bad_block_is_an_error_naming_the_entry(study):
    study.write_text(study.read_text().replace('block = "1/1"', 'block = "3/2"\ncount = 4'))
    with pytest.raises(InputError) as err:
        load_runs(study)
    text = str(err.value)
    assert "[[vms]] #1 (vm{i}).count: is set by files (one VM per file); remove it" in text
    assert "[[vms]] #1 (vm{i}).block: expected 'K/N' with 1 <= K <= N" in text


def test_first_fit_fills_the_first_host_before_the_next(study):
    _, (scenario,) = load_runs(study)
    # 4 GiB hosts, 1 GiB VMs: four on h1, the fifth on h2
    assert [v.host for v in scenario.vms] == ["h1", "h1", "h1", "h1", "h2"]


def test_sova_run_takes_param(study, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", str(study), "--param", "day=d2", "--out", str(out), "--quiet"]) == 0
    assert '"vms": 3' in (out / "summary.json").read_text()
    assert main(["run", str(study), "--param", "day", "--out", str(out), "--quiet", "--force"]) == 2
    assert "--param: 'day': expected NAME=VALUE" in capsys.readouterr().err


def test_more_vms_than_traces_draw_them_with_replacement_the_same_for_the_same_seed(study):
    from sova.sim.engine import Simulator

    text = study.read_text().replace('files = "traces/${day}"\nblock = "1/1"', "count = 12")
    study.write_text(text.replace('file = "traces/${day}"', 'file = "traces/${day}"\ndraw = "with-replacement"'))
    _, (scenario,) = load_runs(study)
    first, again = Simulator(scenario), Simulator(scenario)
    first.step(), again.step()
    drawn = first.last_vm_want.round(2).tolist()
    assert len(drawn) == 12 and drawn == again.last_vm_want.round(2).tolist()
    traces = [round(min((0.1, 0.2, 0.3, 0.4, 0.5), key=lambda v: abs(v - d)), 1) for d in drawn]
    assert traces == pytest.approx(drawn, abs=0.015)  # each VM replays one of d1's five traces (idle CPU aside)
    assert len(set(traces)) > 1 and len(set(traces)) < 12  # different ones, some twice
