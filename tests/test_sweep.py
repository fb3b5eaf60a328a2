"""Parameter sweeps: one file, one validated scenario per value, results per value and profile."""

import json

import pytest

from sova.cli import main
from sova.model.schema import InputError
from sova.model.sweep import load_runs

BASE = """
[scenario]
name = "sw"
duration = 60

[[hosts]]
name = "h1"

[[vms]]
name = "web{i}"
count = 2
host = "h1"

[[vms]]
name = "client"
host = "h1"

[[workloads]]
vm = "web*"
kind = "httperf"
client = "client"

[profiles.default]
"""


def write(tmp_path, text):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


def test_each_value_gives_a_scenario_with_the_key_set(tmp_path):
    p = write(tmp_path, BASE + '[sweep]\ntable = "workloads"\nkind = "httperf"\nkey = "rate"\nvalues = [100, 900]\n')
    sweep, runs = load_runs(p)
    assert sweep.values == (100, 900)
    assert [r.workloads[0].params["rate"] for r in runs] == [100.0, 900.0]


def test_a_vm_count_sweep_grows_the_inventory(tmp_path):
    p = write(tmp_path, BASE + '[sweep]\ntable = "vms"\nmatch = "web*"\nkey = "count"\nvalues = [1, 4]\n')
    _, runs = load_runs(p)
    assert [len(r.vms) for r in runs] == [2, 5]


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        ('table = "vms"\nmatch = "db*"\nkey = "count"\nvalues = [1]', "no [[vms]] entry has a name matching 'db*'"),
        ('table = "workloads"\nkey = "rate"\nvalues = []', "expected a non-empty list"),
        ('table = "racks"\nkey = "x"\nvalues = [1]', "[sweep].table: got 'racks'"),
        ('table = "workloads"\nkind = "httperf"\nkey = "rate"\nvalues = [100, -5]', "[sweep rate = -5]"),
    ],
)
def test_bad_sweeps_name_the_problem(tmp_path, sweep, message):
    with pytest.raises(InputError) as exc:
        load_runs(write(tmp_path, BASE + "[sweep]\n" + sweep + "\n"))
    assert message in str(exc.value)


def test_run_writes_results_per_value_and_profile(tmp_path):
    p = write(
        tmp_path,
        BASE + '[profiles.threshold]\npolicies = ["threshold-migration"]\n'
        '[sweep]\ntable = "workloads"\nkind = "httperf"\nkey = "rate"\nvalues = [100, 200, 400]\n',
    )
    out = tmp_path / "res"
    assert main(["run", str(p), "--out", str(out), "--quiet"]) == 0
    doc = json.loads((out / "summary.json").read_text())
    assert [r["value"] for r in doc["runs"]] == [100, 200, 400]
    served = [r["profiles"]["default"]["services"]["served"] for r in doc["runs"]]
    assert served == pytest.approx([2 * 100 * 60, 2 * 200 * 60, 2 * 400 * 60])
    assert {"sweep-default.csv", "sweep-threshold.csv", "report.html"} <= {f.name for f in out.iterdir()}
    assert any(f.name.startswith("sweep_") and f.suffix == ".png" for f in out.iterdir())
    assert main(["validate", str(p)]) == 0


def test_lockstep_sweeps_change_several_keys_together(tmp_path):
    text = BASE + (
        '[[sweep]]\ntable = "vms"\nmatch = "web{i}"\nkey = "count"\nvalues = [1, 3]\n'
        '[[sweep]]\ntable = "workloads"\nkind = "httperf"\nkey = "rate"\nvalues = [10, 30]\n'
    )
    sweep, runs = load_runs(write(tmp_path, text))
    assert [len(r.vms) for r in runs] == [2, 4]
    assert [r.workloads[0].params["rate"] for r in runs] == [10.0, 30.0]
    assert sweep.lockstep and sweep.axis == "count"


def test_lockstep_entries_need_as_many_values(tmp_path):
    text = BASE + (
        '[[sweep]]\ntable = "vms"\nmatch = "web{i}"\nkey = "count"\nvalues = [1, 3]\n'
        '[[sweep]]\ntable = "workloads"\nkind = "httperf"\nkey = "rate"\nvalues = [10]\n'
    )
    with pytest.raises(InputError, match="as many values as the first"):
        load_runs(write(tmp_path, text))


def test_a_sweep_over_ranges_is_plotted_with_each_range_as_a_tick(tmp_path):
    p = write(
        tmp_path,
        """
[scenario]
name = "sizes"
duration = 5

[simulator]
storage_step = 0.025

[[hosts]]
name = "h1"

[[storage]]
name = "ssd"

[[vms]]
name = "db"
host = "h1"

[[workloads]]
vm = "db"
kind = "fio"
size = "64KiB"
iops = 500

[[slos]]
vm = "db"
throughput = [300, 300]

[profiles.see]
policies = ["see"]

[sweep]
table = "slos"
key = "io_size"
values = [["4KiB", "4KiB"], ["16KiB", "32KiB"]]
""",
    )
    out = tmp_path / "res"
    assert main(["run", str(p), "--out", str(out), "--quiet"]) == 0
    doc = json.loads((out / "summary.json").read_text())
    assert [r["value"] for r in doc["runs"]] == [["4KiB", "4KiB"], ["16KiB", "32KiB"]]
    assert [r["profiles"]["see"]["slo"]["db"]["io_size_mean"] for r in doc["runs"]] == pytest.approx([4096, 16384])
    assert {"sweep_slo_sc_rate.png", "sweep_slo_io_size_mean.png"} <= {f.name for f in out.iterdir()}
