"""Real block-IO traces: the four formats' readers on the public samples (counts from their READMEs), their
errors on bad files, and the block-trace workload kind replaying them at their own pace and as fast as
the storage goes. The samples too large for the project are read from beside the checkout (SHARED_TRACES);
the rest, and excerpts of the large ones, from scenarios/traces."""

from __future__ import annotations

import bz2
import csv
import gzip

import numpy as np
import pytest

from helpers import ROOT, SHARED_TRACES, make_scenario, needs_shared_traces
from sova.model.scenario_reader import scenario_from_dict
from sova.model.schema import InputError
from sova.sim.block_traces import read_block_trace
from sova.sim.engine import Simulator
from sova.sim.traces import TraceError
from sova.sim.workload_kinds.block_trace import READ_BYTES, READS, WRITE_BYTES, WRITES, Replay

CLOUDPHYSICS = SHARED_TRACES / "cloudphysics_libcachesim" / "cloudPhysicsIO.csv"
SYSTOR = SHARED_TRACES / "snia_systor17_sample" / "systor17-traces-sample.csv.gz"
SYSTOR_ADDITIONAL = SHARED_TRACES / "snia_systor17_sample" / "systor17-additional-sample.csv.gz"
TENCENT = SHARED_TRACES / "tencent_cbs_sample" / "cloud_storage-sample.bz2"
# in the project (scenarios/traces/README.md): the whole MSR sample, and excerpts of the others
EXCERPTS = ROOT / "scenarios" / "traces"
MSR = EXCERPTS / "msr-cambridge-hm0-1000.csv.gz"
CLOUDPHYSICS_30_50 = EXCERPTS / "cloudphysics-30-50min.csv.gz"  # minutes 30-50 of CLOUDPHYSICS
SYSTOR_100 = EXCERPTS / "systor17-lun0-100.csv.gz"  # the first 100 requests of SYSTOR
TENCENT_300 = EXCERPTS / "tencent-cbs-300.csv.bz2"  # the first 300 requests of TENCENT


# ---------------------------------------------------------------- the samples, as their READMEs count them


@needs_shared_traces("cloudphysics_libcachesim")
def test_the_cloudphysics_sample_holds_113872_requests_46974_of_them_reads_over_two_hours():
    trace = read_block_trace(CLOUDPHYSICS, "cloudphysics")
    assert len(trace) == 113_872 and trace.read.sum() == 46_974
    assert trace.duration == 7_201  # whole seconds 0..7,200, the last one whole
    assert trace.size.min() == 512 and trace.size.max() == 69_632 and np.median(trace.size) == 53_248
    assert trace.offset[0] == 42_932_745 * 512  # the first request's lbn, in bytes


def test_the_msr_sample_holds_1000_requests_508_reads_over_127_seconds():
    trace = read_block_trace(MSR, "msr")
    assert len(trace) == 1_000 and trace.read.sum() == 508 and trace.volume == 0
    assert trace.time[-1] == pytest.approx(127.2, abs=0.05)
    assert trace.size[0] == 2048 and trace.offset[0] == 9_056_014_336  # the first line, in bytes


@needs_shared_traces("snia_systor17_sample")
@pytest.mark.parametrize(("path", "reads", "span"), [(SYSTOR, 826, 2.45), (SYSTOR_ADDITIONAL, 700, 1.33)])
def test_each_systor_sample_holds_999_requests_with_its_read_count_and_span(path, reads, span):
    trace = read_block_trace(path, "systor")
    assert len(trace) == 999 and trace.read.sum() == reads and trace.volume == 0
    assert trace.time[-1] == pytest.approx(span, abs=0.005)
    assert np.all(np.diff(trace.time) >= 0)  # the file is not in time order; the trace is


@needs_shared_traces("tencent_cbs_sample")
def test_the_tencent_sample_holds_50000_requests_of_2038_volumes_and_the_busiest_is_replayed_by_default():
    every = read_block_trace(TENCENT, "tencent", volume=None)
    assert len(every) == 50_000 and every.read.sum() == 24_521
    assert np.median(every.size) == 8 * 512  # the README's median of 8 sectors
    busiest = read_block_trace(TENCENT, "tencent")
    assert busiest.volume == 1125 and len(busiest) == 1225  # `bzcat | cut -d, -f5 | sort | uniq -c`
    one = read_block_trace(TENCENT, "tencent", volume=1063)
    assert one.volume == 1063 and 0 < len(one) < len(busiest)


@pytest.mark.parametrize(
    ("path", "expected"),
    [(CLOUDPHYSICS_30_50, "cloudphysics"), (MSR, "msr"), (SYSTOR_100, "systor"), (TENCENT_300, "tencent")],
)
def test_auto_tells_each_samples_format_from_its_first_line(path, expected):
    assert read_block_trace(path).format == expected


def test_requests_of_a_whole_second_are_spread_evenly_over_it_in_file_order():
    trace = read_block_trace(CLOUDPHYSICS_30_50)
    first = trace.time[trace.time < 1]  # the first second's requests
    assert np.allclose(first, np.arange(len(first)) / len(first))
    with gzip.open(CLOUDPHYSICS_30_50, "rt") as f:
        sizes = [float(row["size"]) for row, _ in zip(csv.DictReader(f), first, strict=False)]
    assert len(set(sizes)) > 1 and list(trace.size[: len(first)]) == sizes  # the file's order within the second


def test_a_trace_is_parsed_once_per_file_format_and_volume():
    assert read_block_trace(MSR) is read_block_trace(str(MSR))
    assert read_block_trace(TENCENT_300).volume == 1125  # the busiest of the excerpt
    assert read_block_trace(TENCENT_300, volume=1063) is not read_block_trace(TENCENT_300)


# ---------------------------------------------------------------- bad files


def write(tmp_path, text: str, name: str = "trace.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


MSR_LINES = "128166385295514663,hm,0,Write,9056014336,2048,2833\n128166385295514878,hm,0,Read,4096,512,2617\n"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("128166385295515175,hm,0,Write,5548077056,4096", "expected 7 comma-separated fields, got 6"),
        ("128166385295515175,hm,0,Write,5548077056,nan,2320", "size in bytes as a finite, non-negative number"),
        ("128166385295515175,hm,0,Write,5548077056,-512,2320", "got '-512'"),
        ("128166385295515175,hm,0,Write,inf,512,2320", "offset in bytes as a finite"),
        ("-128166385295515175,hm,0,Write,0,512,2320", "timestamp in 100 ns ticks as a non-negative integer"),
        ("128166385295515175,hm,0,Trim,0,512,2320", "expected the IO type as 'read' or 'write', got 'Trim'"),
    ],
)
def test_a_bad_line_is_refused_naming_the_file_the_line_and_what_was_expected(tmp_path, line, expected):
    path = write(tmp_path, MSR_LINES + line + "\n")
    with pytest.raises(TraceError, match=f"{path}: line 3: .*{expected}"):
        read_block_trace(path, "msr")


def test_a_nan_size_in_a_cloudphysics_file_is_refused_at_its_line(tmp_path):
    path = write(tmp_path, "version,time,op,size,lbn\n1,5,2a,512,7\n1,5,28,NaN,8\n")
    with pytest.raises(TraceError, match=f"{path}: line 3: expected the size in bytes as a finite"):
        read_block_trace(path)


def test_an_unknown_scsi_opcode_is_refused_with_the_read_and_write_codes(tmp_path):
    path = write(tmp_path, "version,time,op,size,lbn\n1,5,35,0,7\n")
    with pytest.raises(TraceError, match=r"line 2: expected the IO type as '08' or '28'.*got '35'"):
        read_block_trace(path)


def test_an_unknown_format_is_refused_with_the_formats_known(tmp_path):
    path = write(tmp_path, MSR_LINES)
    with pytest.raises(TraceError, match=f"{path}: unknown block-trace format 'blktrace'; expected 'auto' or one of"):
        read_block_trace(path, "blktrace")


def test_a_file_of_no_known_format_is_refused_when_auto_cannot_tell(tmp_path):
    path = write(tmp_path, "time op size\n1 R 4096\n")
    with pytest.raises(TraceError, match=f"{path}: line 1: cannot tell the block trace's format"):
        read_block_trace(path)


def test_a_missing_file_an_empty_one_and_an_absent_volume_are_refused(tmp_path):
    with pytest.raises(TraceError, match="no such trace file"):
        read_block_trace(tmp_path / "absent.csv", "msr")
    with pytest.raises(TraceError, match="no requests; expected one request per line"):
        read_block_trace(write(tmp_path, "Timestamp,Response,IOType,LUN,Offset,Size\n", "empty.csv"), "systor")
    with pytest.raises(TraceError, match=r"no requests of volume 9; expected one of the trace's volumes \(0\)"):
        read_block_trace(write(tmp_path, MSR_LINES, "msr.csv"), volume=9)
    with pytest.raises(TraceError, match="holds one disk"):
        read_block_trace(write(tmp_path, "version,time,op,size,lbn\n1,5,2a,512,7\n", "cp.csv"), volume=2)


def test_compressed_files_are_read_by_their_first_bytes_whatever_their_name(tmp_path):
    lines = "1538323199,8,8,0,7\n1538323200,16,16,1,7\n1538323200,32,8,0,8\n"
    (tmp_path / "a.gz").write_bytes(gzip.compress(lines.encode()))
    (tmp_path / "b.csv").write_bytes(bz2.compress(lines.encode()))
    for name in ("a.gz", "b.csv"):
        trace = read_block_trace(tmp_path / name)
        assert trace.format == "tencent" and trace.volume == 7 and list(trace.size) == [4096, 8192]
        assert list(trace.time) == [0.0, 1.0] and trace.duration == 2.0


# ---------------------------------------------------------------- the workload kind


def replay_sim(seconds: int, vms: int = 1, phases: list | None = None, device: str = "ssd", **params) -> Simulator:
    scenario = make_scenario(
        scenario={"duration": seconds},
        hosts=[{"name": "h1", "cores": 16}],
        storage=[{"name": "st", "device": device}],
        vms=[{"name": "vm{i}", "count": vms, "host": "h1"}],
        workloads=[{"kind": "block-trace", "vm": "vm*", **params} | ({"phases": phases} if phases else {})],
        simulator={"io_noise": False},
    )
    sim = Simulator(scenario)
    for _ in range(seconds):
        sim.step()
    return sim


def in_window(trace, lo: float, hi: float) -> np.ndarray:
    """The requests arriving in [lo, hi) of the trace's looping clock."""
    loops = np.arange(np.floor(lo / trace.duration), np.ceil(hi / trace.duration) + 1)
    time = (loops[:, None] * trace.duration + trace.time[None, :]).ravel()
    return np.tile(np.arange(len(trace)), len(loops))[(time >= lo) & (time < hi)]


def counted(sim: Simulator, vm: int = 0) -> tuple[float, float, float, float]:
    c = sim.sensors.counters
    return c["blk_rd_ops"][vm], c["blk_wr_ops"][vm], c["blk_rd_bytes"][vm], c["blk_wr_bytes"][vm]


def trace_counts(trace, requests: np.ndarray) -> tuple[float, float, float, float]:
    read = trace.read[requests]
    size = trace.size[requests]
    return read.sum(), (~read).sum(), size[read].sum(), size[~read].sum()


def test_at_its_own_pace_a_vm_issues_the_requests_the_trace_has_in_the_window_it_replays():
    sim = replay_sim(300, file=str(CLOUDPHYSICS_30_50), start=30)
    trace = read_block_trace(CLOUDPHYSICS_30_50)
    expected = trace_counts(trace, in_window(trace, 30, 330))
    assert expected[0] > 1000 and expected[1] > 1000  # a busy stretch of reads and writes
    assert counted(sim) == pytest.approx(expected, rel=1e-9)  # reads, writes and their bytes


def test_speed_two_replays_two_trace_seconds_per_simulated_second():
    sim = replay_sim(60, file=str(CLOUDPHYSICS_30_50), start=30, speed=2)
    trace = read_block_trace(CLOUDPHYSICS_30_50)
    assert counted(sim) == pytest.approx(trace_counts(trace, in_window(trace, 30, 150)), rel=1e-9)


def test_at_its_own_pace_a_replay_loops_at_the_end_of_the_trace():
    trace = read_block_trace(MSR)
    sim = replay_sim(300, file=str(MSR))  # 127.4 s a loop: two loops and part of a third
    requests = in_window(trace, 0, 300)
    assert len(requests) > 2 * len(trace)
    assert counted(sim) == pytest.approx(trace_counts(trace, requests), rel=1e-9)


def test_the_vms_of_one_entry_replay_the_trace_half_a_loop_apart_unless_told_not_to_stagger():
    trace = read_block_trace(MSR)
    sim = replay_sim(60, vms=2, file=str(MSR))
    half = trace.duration / 2
    assert counted(sim, 0) == pytest.approx(trace_counts(trace, in_window(trace, 0, 60)), rel=1e-9)
    assert counted(sim, 1) == pytest.approx(trace_counts(trace, in_window(trace, half, half + 60)), rel=1e-9)
    lockstep = Simulator(
        make_scenario(
            storage=[{"name": "ssd"}],
            vms=[{"name": "vm{i}", "count": 2, "host": "h1"}],
            workloads=[{"kind": "block-trace", "vm": "vm*", "file": str(MSR), "stagger": False}],
        )
    )
    assert list(lockstep.workloads.group("block-trace").state["clock"]) == [0.0, 0.0]


def test_as_fast_as_possible_a_replay_outruns_the_trace_on_an_ssd_in_the_traces_read_share():
    trace = read_block_trace(CLOUDPHYSICS_30_50)
    seconds = 30
    sim = replay_sim(seconds, file=str(CLOUDPHYSICS_30_50), pace="fast", iodepth=32)
    reads, writes, _, _ = counted(sim)
    own_rate = len(trace) / trace.duration  # 28 requests/s
    assert (reads + writes) / seconds > 1000 * own_rate
    assert (reads + writes) / len(trace) > 10  # many loops of the trace: its read share over a loop
    assert reads / (reads + writes) == pytest.approx(trace.read.mean(), abs=0.01)


@pytest.mark.parametrize("device", ["ssd", "disk-array"])
def test_a_fast_replay_counts_the_reads_and_bytes_of_the_trace_requests_it_served(device):
    # a disk array serves sequential stretches 80 times faster than random ones: the replay's pace swings.
    # 25 s keep the disk array within the excerpt's first loop: the mix jumps where a loop ends, and the
    # counters pay what the served requests held beyond it over the next step or two (0.75 % of the bytes
    # at 30 s), as the module says
    trace = read_block_trace(CLOUDPHYSICS_30_50)
    sim = replay_sim(25, file=str(CLOUDPHYSICS_30_50), pace="fast", device=device)
    reads, writes, read_bytes, write_bytes = counted(sim)
    position = sim.workloads.group("block-trace").state["position"][0]
    assert reads + writes == pytest.approx(position, rel=1e-9)  # the position moved by what was served
    held = Replay(trace).between(np.zeros(1), np.floor(np.array([position])))[:, 0]
    assert reads / (reads + writes) == pytest.approx(held[READS] / (held[READS] + held[WRITES]), abs=0.003)
    mean_size = (held[READ_BYTES] + held[WRITE_BYTES]) / (held[READS] + held[WRITES])
    assert (read_bytes + write_bytes) / (reads + writes) == pytest.approx(mean_size, rel=0.005)


def test_a_fast_replay_keeps_its_depth_outstanding():
    sim = replay_sim(5, file=str(CLOUDPHYSICS_30_50), pace="fast", iodepth=4)
    served, latency = sim.sensors.gauges["io"]["served_ios"][0], sim.sensors.gauges["io"]["latency"][0]
    assert served * latency == pytest.approx(4, rel=1e-6)  # Little's law


def test_a_phase_may_switch_a_replay_from_its_own_pace_to_as_fast_as_possible():
    sim = replay_sim(20, file=str(MSR), phases=[{"at": 10, "pace": "fast"}])
    trace = read_block_trace(MSR)
    first = trace_counts(trace, in_window(trace, 0, 10))
    reads, writes, _, _ = counted(sim)
    assert reads + writes > 100 * (first[0] + first[1])


def test_a_scenario_naming_an_absent_volume_is_refused_naming_its_workload_entry():
    scenario = make_scenario(
        storage=[{"name": "ssd"}],
        vms=[{"name": "vm", "host": "h1"}],
        workloads=[{"kind": "block-trace", "vm": "vm", "file": str(MSR), "volume": 3}],
    )
    with pytest.raises(TraceError, match=r"\[\[workloads\]\] #1\.file: .*no requests of volume 3"):
        Simulator(scenario)


def test_a_scenario_with_an_unknown_pace_is_refused_with_the_choices():
    with pytest.raises(InputError, match="pace: got 'realtime'; expected one of 'own', 'fast'"):
        make_scenario(
            storage=[{"name": "ssd"}],
            vms=[{"name": "vm", "host": "h1"}],
            workloads=[{"kind": "block-trace", "vm": "vm", "file": __file__, "pace": "realtime"}],
        )


def test_a_relative_file_is_read_from_the_scenarios_folder(tmp_path):
    write(tmp_path, "version,time,op,size,lbn\n" + "".join(f"1,{t},28,4096,{t}\n" for t in range(10)))
    raw = {
        "scenario": {"name": "t", "duration": 5},
        "hosts": [{"name": "h1"}],
        "storage": [{"name": "ssd"}],
        "vms": [{"name": "vm", "host": "h1"}],
        "workloads": [{"kind": "block-trace", "vm": "vm", "file": "trace.csv"}],
        "simulator": {"io_noise": False},
    }
    sim = Simulator(scenario_from_dict(raw, base_dir=tmp_path))
    for _ in range(5):
        sim.step()
    assert counted(sim) == (5, 0, 5 * 4096, 0)  # one read a second


def test_a_replay_without_a_storage_server_is_refused_when_the_scenario_is_read(tmp_path):
    with pytest.raises(InputError, match="block-trace does disk IO; expected a \\[\\[storage\\]\\] server"):
        make_scenario(
            vms=[{"name": "vm", "host": "h1"}],
            workloads=[{"kind": "block-trace", "vm": "vm", "file": str(write(tmp_path, MSR_LINES))}],
        )
