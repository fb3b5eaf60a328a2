"""metrics.parquet: every profile's time series in one tidy table, with the run's labels in columns; a
sweep's values stacked; a study of several runs read in one call."""

from __future__ import annotations

import pyarrow.dataset as ds
import pyarrow.parquet as pq

from sova.cli import main

SCENARIO = """
[scenario]
name = "tidy"
duration = 900
step = 300
seed = 4

[params]
load = 0.4

[[hosts]]
name = "h{i}"
count = 2

[[vms]]
name = "v{i}"
count = 2

[[workloads]]
vm = "v*"
kind = "lookbusy"
util = "${load}"

[profiles.a]
policies = []

[profiles.b]
policies = ["host-standby"]

[outputs]
csv = false
plots = false
"""


def test_a_run_writes_one_tidy_table_with_its_labels_and_no_csv_when_asked(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    table = pq.read_table(tmp_path / "out" / "metrics.parquet").to_pydict()
    assert table["profile"] == ["a"] * 3 + ["b"] * 3 and table["time"] == [300.0, 600.0, 900.0] * 2
    assert set(table["scenario"]) == {"tidy"} and set(table["seed"]) == {4} and set(table["load"]) == {0.4}
    assert len(table["host_util_mean"]) == 6
    assert not list((tmp_path / "out").glob("metrics-*.csv"))


def test_a_sweep_stacks_its_values_and_a_study_reads_in_one_call(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO + '\n[sweep]\ntable = "params"\nkey = "load"\nvalues = [0.2, 0.8]\n')
    assert main(["run", str(path), "--out", str(tmp_path / "sweep"), "--quiet"]) == 0
    table = pq.read_table(tmp_path / "sweep" / "metrics.parquet").to_pydict()
    assert sorted(set(table["load"])) == [0.2, 0.8] and len(table["time"]) == 2 * 2 * 3
    busy = [u for u, load in zip(table["host_util_mean"], table["load"], strict=True) if load == 0.8]
    idle = [u for u, load in zip(table["host_util_mean"], table["load"], strict=True) if load == 0.2]
    assert min(busy) > max(idle)
    # two runs of a study (two days, say): one read of the folder, told apart by their [params]
    path.write_text(SCENARIO)
    for load in ("0.1", "0.3"):
        assert (
            main(["run", str(path), "--param", f"load={load}", "--out", str(tmp_path / "study" / load), "--quiet"]) == 0
        )
    folder = ds.dataset(tmp_path / "study", format="parquet", exclude_invalid_files=True)  # its Parquet files
    study = folder.to_table().to_pydict()
    assert sorted(set(study["load"])) == [0.1, 0.3] and len(study["time"]) == 12
