"""VM lifetime traces: OpenDC Parquet (schema v4) and Azure Public Dataset V1 readers."""

from __future__ import annotations

import gzip
import math
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sova.sim.lifetime_traces import VMLifetimeTrace, read_azure, read_opendc
from sova.sim.traces import TraceError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
OPENDC = FIXTURES / "opendc_bitbrains_excerpt"  # 7 VMs of OpenDC's bitbrains-small (fixtures/README.md)
AZURE = FIXTURES / "azure_v2017_sample"


def write_opendc(folder: Path, tasks: dict, fragments: dict) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(tasks), folder / "tasks.parquet")
    pq.write_table(pa.table(fragments), folder / "fragments.parquet")
    return str(folder)


def some_tasks(n: int = 1, **columns) -> dict:
    """n tasks with ids 1..n: 2 cores, 1000 MHz, 2 GiB (in KiB), submitted at 1000 s and lasting 1200 s."""
    task = {"id": list(range(1, n + 1)), "submission_time": [1_000_000] * n, "duration": [1_200_000] * n}
    task |= {"cpu_count": [2] * n, "cpu_capacity": [1000.0] * n, "mem_capacity": [2 * 1024 * 1024] * n}
    return task | columns


def write_azure(folder: Path, vmtable: list[str], readings: dict[str, list[str]]) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "vmtable.csv.gz", "wt") as f:
        f.write("".join(line + "\n" for line in vmtable))
    for name, lines in readings.items():
        with gzip.open(folder / name, "wt") as f:
            f.write("".join(line + "\n" for line in lines))
    return str(folder)


def vm_line(vm: str, created: int | str, deleted: int, cores: str = "2", memory: str = "3.5") -> str:
    return f"{vm},sub,dep,{created},{deleted},90.0,20.0,80.0,Interactive,{cores},{memory}"


def by_name(vms: list[VMLifetimeTrace]) -> dict[str, VMLifetimeTrace]:
    return {vm.name: vm for vm in vms}


# --- the real samples (excerpts) -------------------------------------------------------------------------------------------


def test_reads_the_opendc_sample_with_the_values_pyarrow_reads_directly():
    vms = read_opendc(str(OPENDC))
    tasks = pq.read_table(OPENDC / "tasks.parquet").to_pydict()
    frags = pq.read_table(OPENDC / "fragments.parquet").to_pydict()
    assert len(vms) == 7 == len(tasks["id"])
    row = tasks["id"].index(1019)
    vm = by_name(vms)["1019"]
    start = min(tasks["submission_time"])
    assert vm.arrive_s == (tasks["submission_time"][row] - start) / 1000
    assert vm.depart_s == vm.arrive_s + tasks["duration"][row] / 1000
    assert vm.cores == tasks["cpu_count"][row] == 1
    assert vm.capacity_mhz == tasks["cpu_capacity"][row]
    assert vm.memory_mib == tasks["mem_capacity"][row] / 1024  # KiB in the file
    assert vm.interval_s == 300.0
    # the first fragments are whole 5-minute multiples: held for duration / 300 s each
    mine = [(d, u) for i, d, u in zip(frags["id"], frags["duration"], frags["cpu_usage"], strict=True) if i == 1019]
    expected = []
    for duration, usage in mine:
        if duration % 300_000:
            break
        expected += [usage / vm.capacity_mhz] * (duration // 300_000)
    assert len(expected) > 10
    np.testing.assert_allclose(vm.cpu[: len(expected)], expected, rtol=1e-12)
    assert len(vm.cpu) == math.ceil(sum(d for d, _ in mine) / 300_000)


def test_opendc_sample_fractions_lie_in_the_unit_interval_and_cover_each_life():
    vms = read_opendc(str(OPENDC))
    for vm in vms:
        assert vm.interval_s > 0 and vm.cores >= 1 and vm.memory_mib > 0
        assert np.all((vm.cpu >= 0) & (vm.cpu <= 1))
        assert len(vm.cpu) == math.ceil((vm.depart_s - vm.arrive_s) / vm.interval_s)  # fragments sum to duration
    assert min(vm.arrive_s for vm in vms) == 0.0
    assert max(vm.cpu.max() for vm in vms) == 1.0  # some VMs report usage above capacity: clipped


def test_results_are_ordered_by_arrival_then_name_and_cached_per_path():
    vms = read_opendc(str(OPENDC))
    assert [(v.arrive_s, v.name) for v in vms] == sorted((v.arrive_s, v.name) for v in vms)
    again = read_opendc(str(OPENDC))
    assert again is not vms and all(a is b for a, b in zip(again, vms, strict=True))
    with pytest.raises(ValueError):
        vms[0].cpu[0] = 0.5  # shared through the cache, so read-only


def test_reads_the_azure_sample_with_lifetimes_relative_to_the_earliest_creation():
    vms = read_azure(str(AZURE))
    assert len(vms) == 10
    assert min(vm.arrive_s for vm in vms) == 0.0
    late = next(vm for vm in vms if vm.name.startswith("aTSXW3N1"))
    assert (late.arrive_s, late.depart_s) == (2290500.0, 2292300.0)
    assert next(vm for vm in vms if vm.name.startswith("z5i2HiSa")).depart_s == 2188500.0
    assert sum(math.isinf(vm.depart_s) for vm in vms) == 6  # deleted at the last reading, 2,591,700 s
    big = next(vm for vm in vms if vm.name.startswith("1XiU+Kpv"))
    assert (big.cores, big.memory_mib) == (8, 56 * 1024)
    small = next(vm for vm in vms if vm.name.startswith("H5CxmMoV"))
    assert (small.cores, small.memory_mib) == (1, 0.75 * 1024)
    assert all(vm.interval_s == 300.0 and vm.capacity_mhz is None for vm in vms)
    # the excerpt's 100 readings belong to other VMs than its vmtable's 10: they are skipped
    assert all(len(vm.cpu) == 0 for vm in vms)


# --- Azure behaviour on small files ------------------------------------------------------------------------------


def test_azure_cpu_series_follows_the_readings_from_creation_holding_gaps(tmp_path):
    vmtable = [vm_line("a", 600, 3000), vm_line("b", 0, 2_591_700)]
    readings = {
        "vm_cpu_readings-file-1-of-125.csv.gz": ["600,a,1,50,10", "900,a,1,50,20", "0,ghost,1,2,3", "300,a,0,9,99"],
        "vm_cpu_readings-file-2-of-125.csv.gz": ["1500,a,1,50,40", "3300,a,1,1,77", "300,b,0,200,150"],
    }
    vms = by_name(read_azure(write_azure(tmp_path, vmtable, readings)))
    # 300 s before creation and 3300 s after deletion are outside a's life; 1200 s is missing: held
    np.testing.assert_allclose(vms["a"].cpu, [0.1, 0.2, 0.2, 0.4])
    np.testing.assert_allclose(vms["b"].cpu, [0.0, 1.0])  # idle before the first reading; 150 % clipped
    assert (vms["a"].arrive_s, vms["a"].depart_s) == (600.0, 3000.0)
    assert vms["b"].depart_s == math.inf


def test_azure_open_buckets_are_taken_at_their_bound(tmp_path):
    vms = read_azure(write_azure(tmp_path, [vm_line("huge", 0, 600, cores=">24", memory=">64")], {}))
    assert (vms[0].cores, vms[0].memory_mib) == (24, 64 * 1024)
    assert len(vms[0].cpu) == 0


# --- OpenDC resampling -------------------------------------------------------------------------------------------


def test_uneven_fragments_are_resampled_onto_the_smallest_duration(tmp_path):
    fragments = {"id": [1] * 4, "duration": [300_000, 600_000, 150_000, 150_000], "cpu_usage": [100.0, 200, 300, 0]}
    vm = read_opendc(write_opendc(tmp_path, some_tasks(), fragments))[0]
    assert vm.interval_s == 150.0
    np.testing.assert_allclose(vm.cpu, [0.1, 0.1, 0.2, 0.2, 0.2, 0.2, 0.3, 0.0])
    assert (vm.arrive_s, vm.depart_s, vm.cores, vm.memory_mib) == (0.0, 1200.0, 2, 2048.0)


def test_a_fragment_straddling_a_cell_is_averaged_by_time(tmp_path):
    fragments = {"id": [1, 1, 1], "duration": [300_000, 599_000, 300_000], "cpu_usage": [100.0, 400.0, 700.0]}
    vm = read_opendc(write_opendc(tmp_path, some_tasks(), fragments))[0]
    assert vm.interval_s == 300.0
    np.testing.assert_allclose(vm.cpu, [0.1, 0.4, (299 * 0.4 + 0.7) / 300, 0.7])  # last cell: 299 s of 0.7


def test_fragments_are_grouped_by_id_in_file_order_and_unknown_ids_skipped(tmp_path):
    tasks = some_tasks(3, id=[7, 3, 5], submission_time=[5000, 2000, 2000], duration=[600_000] * 3)
    fragments = {"id": [3, 7, 99, 3, 7], "duration": [300_000] * 5, "cpu_usage": [10.0, 20, 30, 40, 50]}
    vms = read_opendc(write_opendc(tmp_path, tasks, fragments))
    assert [vm.name for vm in vms] == ["3", "5", "7"]
    assert [vm.arrive_s for vm in vms] == [0.0, 0.0, 3.0]
    np.testing.assert_allclose(vms[0].cpu, [0.01, 0.04])
    np.testing.assert_allclose(vms[2].cpu, [0.02, 0.05])
    assert len(vms[1].cpu) == 0 and vms[1].interval_s == 300.0  # no fragments: idle, the others' step


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(1, 2_000_000), st.floats(0, 5000, allow_nan=False)),
        min_size=1,
        max_size=30,
    )
)
def test_resampling_keeps_the_time_weighted_mean_of_cpu_usage(rows):
    capacity = 1e4  # above every usage: nothing is clipped
    ids = sorted({i for i, _, _ in rows})
    tasks = some_tasks(len(ids), id=ids, cpu_capacity=[capacity] * len(ids))
    fragments = {"id": [r[0] for r in rows], "duration": [r[1] for r in rows], "cpu_usage": [r[2] for r in rows]}
    with tempfile.TemporaryDirectory() as folder:
        vms = by_name(read_opendc(write_opendc(Path(folder), tasks, fragments)))
    for i in ids:
        total_ms = sum(d for j, d, _ in rows if j == i)
        integral = sum(d * u for j, d, u in rows if j == i)
        step = min(d for j, d, _ in rows if j == i)
        assert vms[str(i)].interval_s == pytest.approx(step / 1000)
        cells = np.minimum(step, total_ms - step * np.arange(len(vms[str(i)].cpu)))  # the last cell may be short
        assert np.all(cells > 0) and cells.sum() == total_ms
        assert np.sum(vms[str(i)].cpu * capacity * cells) == pytest.approx(integral, rel=1e-9, abs=1e-3)


# --- errors ------------------------------------------------------------------------------------------------------


def test_a_missing_directory_or_file_is_named(tmp_path):
    with pytest.raises(TraceError, match=r"nowhere: no such directory"):
        read_opendc(str(tmp_path / "nowhere"))
    with pytest.raises(TraceError, match=r"tasks\.parquet: no such trace file"):
        read_opendc(str(tmp_path))
    with pytest.raises(TraceError, match=r"vmtable\.csv\.gz: no such trace file"):
        read_azure(str(tmp_path))


GOOD = {"id": [1], "duration": [300_000], "cpu_usage": [10.0]}
OPENDC_ERRORS = {  # case: (tasks, fragments, where the message must point)
    "missing column": (some_tasks(), {"id": [1], "duration": [300_000]}, r"fragments\.parquet: no column 'cpu_usage'"),
    "wrong type": (some_tasks(), GOOD | {"duration": ["5 min"]}, r"fragments\.parquet: column 'duration' is of type"),
    "NaN duration": (
        some_tasks(duration=[math.nan]),
        GOOD,
        r"tasks\.parquet: row 1 \(id 1\): column 'duration' is nan",
    ),
    "infinite duration": (
        some_tasks(),
        {"id": [1, 1], "duration": [300_000.0, math.inf], "cpu_usage": [1.0, 2.0]},
        r"fragments\.parquet: row 2 \(id 1\): column 'duration' is inf",
    ),
    "negative duration": (some_tasks(duration=[-5]), GOOD, r"tasks\.parquet: row 1 \(id 1\): column 'duration' is -5"),
    "negative usage": (
        some_tasks(),
        GOOD | {"cpu_usage": [-1.0]},
        r"fragments\.parquet: row 1 \(id 1\): column 'cpu_usage'",
    ),
    "no cores": (some_tasks(cpu_count=[0]), GOOD, r"tasks\.parquet: row 1 \(id 1\): column 'cpu_count' is 0"),
    "no capacity": (some_tasks(cpu_capacity=[0.0]), GOOD, r"tasks\.parquet: row 1 \(id 1\): column 'cpu_capacity'"),
    "null": (
        some_tasks(cpu_count=pa.array([None], pa.int32())),
        GOOD,
        r"tasks\.parquet: row 1: column 'cpu_count' is empty",
    ),
    "repeated id": (some_tasks(2, id=[1, 1]), GOOD, r"tasks\.parquet: row 2: id '1' appears twice"),
}


@pytest.mark.parametrize(("tasks", "fragments", "where"), OPENDC_ERRORS.values(), ids=OPENDC_ERRORS.keys())
def test_a_malformed_opendc_trace_names_the_file_and_the_place(tmp_path, tasks, fragments, where):
    with pytest.raises(TraceError, match=where) as caught:
        read_opendc(write_opendc(tmp_path, tasks, fragments))
    assert "; expected " in str(caught.value)


def test_a_file_that_is_not_parquet_is_reported(tmp_path):
    write_opendc(tmp_path, some_tasks(), GOOD)
    (tmp_path / "fragments.parquet").write_text("id,duration\n")
    with pytest.raises(TraceError, match=r"fragments\.parquet: cannot read as Parquet"):
        read_opendc(str(tmp_path))


READINGS = "vm_cpu_readings-file-1-of-125.csv.gz"
ONE_VM = [vm_line("a", 0, 600)]
AZURE_ERRORS = {  # case: (vmtable lines, readings lines, where the message must point)
    "short line": ([*ONE_VM, "b,sub,dep,0,600"], [], r"vmtable\.csv\.gz: line 2: 5 ','-separated columns; expected 11"),
    "not a number": ([*ONE_VM, vm_line("b", "soon", 600)], [], r"vmtable\.csv\.gz: line 2: column 'created' is 'soon'"),
    "deleted before created": ([vm_line("a", 900, 600)], [], r"vmtable\.csv\.gz: line 1: column 'deleted' is 600"),
    "negative time": ([vm_line("a", -300, 600)], [], r"vmtable\.csv\.gz: line 1: column 'created' is -300"),
    "repeated VM": ([*ONE_VM, vm_line("a", 0, 900)], [], r"vmtable\.csv\.gz: line 2: id 'a' appears twice"),
    "bad cores": ([vm_line("a", 0, 600, cores="many")], [], r"vmtable\.csv\.gz: line 1: column 'cores' is 'many'"),
    "no memory": ([vm_line("a", 0, 600, memory="")], [], r"vmtable\.csv\.gz: line 1: column 'memory_gb' is ''"),
    "short reading": (ONE_VM, ["0,a,1,2,3", "300,a,1,2"], rf"{READINGS}: line 2: 4 ','-separated columns; expected 5"),
    "bad reading": (ONE_VM, ["0,a,1,2,3", "300,a,1,2,x"], rf"{READINGS}: line 2: column 'avg_cpu' is 'x'"),
    "negative reading": (ONE_VM, ["0,a,1,2,3", "300,a,1,2,-4"], rf"{READINGS}: line 2: column 'avg_cpu' is -4"),
    "empty reading": (ONE_VM, ["0,a,1,2,3", "300,a,1,2,"], rf"{READINGS}: line 2: column 'avg_cpu' is empty"),
}


@pytest.mark.parametrize(("vmtable", "readings", "where"), AZURE_ERRORS.values(), ids=AZURE_ERRORS.keys())
def test_a_malformed_azure_trace_names_the_file_and_the_line(tmp_path, vmtable, readings, where):
    with pytest.raises(TraceError, match=where) as caught:
        read_azure(write_azure(tmp_path, vmtable, {READINGS: readings}))
    assert "; expected " in str(caught.value)


def test_a_failed_read_is_not_cached(tmp_path):
    path = write_azure(tmp_path, [vm_line("a", 900, 600)], {})
    with pytest.raises(TraceError):
        read_azure(path)
    write_azure(tmp_path, [vm_line("a", 0, 600)], {})
    assert [vm.name for vm in read_azure(path)] == ["a"]
