"""VMs whose lives come from a trace (OpenDC Parquet, Azure V1): they arrive, are sized, replay their CPU
from their arrival, and leave when the trace says; Bitbrains VMs are sized by their traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers import make_scenario
from sova.control.runtime import Runtime
from sova.drivers.sim import SimDriver
from sova.model.scenario import ControlSpec
from sova.model.schema import InputError
from sova.sim.engine import Simulator
from sova.sim.lifetime_traces import read_azure, read_opendc
from sova.sim.traces import TraceError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
OPENDC = FIXTURES / "opendc_bitbrains_excerpt"  # 7 VMs of OpenDC's bitbrains-small (fixtures/README.md)
AZURE = FIXTURES / "azure_v2017_sample"

HOSTS = [{"name": "h{i}", "count": 4, "cores": 64, "memory": "256GiB"}]


def trace_scenario(kind: str, path: Path, vms: int, duration: float, step: float = 300.0):
    return make_scenario(
        scenario={"duration": duration, "step": step},
        hosts=HOSTS,
        vms=[{"name": "t{i}", "count": vms, "from_trace": True}],
        workloads=[{"kind": kind, "vm": "t*", "file": str(path)}],
    )


def run(scenario, seconds: float) -> tuple[Simulator, dict[float, object]]:
    sim = Simulator(scenario)
    driver = SimDriver(sim)
    runtime = Runtime(driver, [], ControlSpec(monitor_period=scenario.step))
    runtime.tick()
    seen = {}
    while sim.t < seconds - 1e-9:
        sim.step()
        runtime.tick()
        seen[sim.t] = driver.observe()
    return sim, seen


def test_opendc_vms_arrive_sized_as_their_trace_and_replay_its_cpu_from_their_arrival():
    lives = read_opendc(str(OPENDC))
    late = next(k for k, life in enumerate(lives) if life.arrive_s > 0)  # the first VM that comes later
    scenario = trace_scenario("opendc", OPENDC, len(lives), duration=lives[late].arrive_s + 7200)
    sim, seen = run(scenario, scenario.duration)
    assert sim.compute.vm_vcpus.tolist() == [life.cores for life in lives]
    assert sim.vms.memory.tolist() == pytest.approx([life.memory_mib for life in lives])
    name = f"t{late + 1}"
    arrival = lives[late].arrive_s
    before = max(t for t in seen if t <= arrival - 300)
    assert name not in seen[before].vms
    first_at = min(t for t in seen if name in seen[t].vms)
    assert arrival <= first_at <= arrival + 300  # at the first step boundary after its arrival
    # from its arrival it burns what its trace says, sample by sample (300 s samples, 300 s steps)
    snapshot = seen[max(seen)]
    got = snapshot.counters.cpu_time[snapshot.vms.index(name)]
    start = int(np.ceil(arrival / 300))  # its first whole step
    steps = round(max(seen) / 300) - start
    offset = start * 300 - arrival
    samples = np.array([lives[late].cpu[int((offset + 300 * k) // 300)] for k in range(steps)])
    idle = sim.params["idle_guest_cpu"] * 300 * steps  # a guest's timer ticks, on top of its trace
    assert got == pytest.approx((samples * lives[late].cores * 300).sum() + idle, rel=1e-6)


def test_azure_vms_leave_when_the_vmtable_says_they_were_deleted():
    lives = read_azure(str(AZURE))
    gone = next(k for k, life in enumerate(lives) if np.isfinite(life.depart_s))
    scenario = trace_scenario("azure", AZURE, len(lives), duration=lives[gone].depart_s + 600, step=300.0)
    sim = Simulator(scenario)
    runtime = Runtime(SimDriver(sim), [], ControlSpec(monitor_period=300.0))
    runtime.tick()
    sim_steps = round(scenario.duration / scenario.tick)
    for _ in range(sim_steps):
        sim.step()
        runtime.tick()
    deleted = {e.vm: e.time for e in sim.lifecycle.log if e.event == "deleted"}
    assert deleted[f"t{gone + 1}"] == pytest.approx(lives[gone].depart_s)
    created = {e.vm for e in sim.lifecycle.log if e.event == "created"}
    assert created == {f"t{k + 1}" for k, life in enumerate(lives) if life.arrive_s <= scenario.duration}


def test_an_entry_with_more_vms_than_its_trace_is_refused_with_its_place():
    scenario = trace_scenario("azure", AZURE, 11, duration=600)
    with pytest.raises(TraceError) as err:
        Simulator(scenario)
    assert "[[workloads]] #1.file" in str(err.value) and "holds 10 VM(s) for 11 VMs" in str(err.value)


def test_a_vm_that_takes_its_life_from_a_trace_no_lifetime_workload_names_is_refused():
    with pytest.raises(InputError) as err:
        make_scenario(
            hosts=HOSTS,
            vms=[{"name": "t{i}", "count": 2, "from_trace": True}],
            workloads=[{"kind": "opendc", "vm": "t1", "file": str(OPENDC)}],
        )
    assert "[[vms]] (t2).from_trace" in str(err.value) and "no azure, opendc or bitbrains workload names" in str(
        err.value
    )


BITBRAINS_HEAD = "Timestamp [ms];\tCPU cores;\tCPU capacity provisioned [MHZ];\tCPU usage [MHZ];\tCPU usage [%];\t"
BITBRAINS_HEAD += "Memory capacity provisioned [KB];\tMemory usage [KB];\tDisk read throughput [KB/s];\t"
BITBRAINS_HEAD += (
    "Disk write throughput [KB/s];\tNetwork received throughput [KB/s];\tNetwork transmitted throughput [KB/s]"
)


def bitbrains_vm(path: Path, rows: list[tuple[int, int]]) -> Path:
    """A GWA-T-12 file with (cores, memory KB) per 300 s sample, 50 % busy."""
    lines = [BITBRAINS_HEAD] + [
        f"{1372629804 + 300 * k};\t{cores};\t{cores * 2600};\t{cores * 1300};\t50;\t{kb};\t{kb // 4};\t1;\t2;\t3;\t4"
        for k, (cores, kb) in enumerate(rows)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_bitbrains_vms_are_sized_by_the_most_their_trace_provisioned_and_placed_by_admission(tmp_path):
    traces = tmp_path / "rnd"
    traces.mkdir()
    bitbrains_vm(traces / "1.csv", [(2, 4 * 1024**2), (4, 8 * 1024**2), (0, 0)])  # resized, then switched off
    bitbrains_vm(traces / "2.csv", [(1, 1024**2)] * 3)
    scenario = make_scenario(
        scenario={"duration": 900, "step": 300},
        hosts=HOSTS,
        storage=[{"name": "san"}],
        vms=[{"name": "t{i}", "count": 2, "from_trace": True}],
        workloads=[{"kind": "bitbrains", "vm": "t*", "file": str(traces)}],
    )
    sim, _ = run(scenario, 900)
    assert sim.compute.vm_vcpus.tolist() == [4, 1]
    assert sim.vms.memory.tolist() == pytest.approx([8192.0, 1024.0])  # MiB
    assert {(e.vm, e.event) for e in sim.lifecycle.log} >= {("t1", "created"), ("t2", "created")}
