"""The settings that give CloudSim 3.0.3's behaviour where Sova's differs (docs/consolidation.md), each on a
case worked out by hand: the order a workload takes a trace set's files in; whether a running VM holds its
memory (vm_memory); whether a VM leaves when its trace goes idle (leave)."""

from __future__ import annotations

import dataclasses
import io
import os
import tarfile

import numpy as np
import pytest

from helpers import make_scenario
from sova.control.action_rails import Ledger
from sova.control.executor import Executor
from sova.drivers.sim import SimDriver
from sova.model.actions import OK, Migrate
from sova.model.knowledge import Knowledge
from sova.model.scenario import ControlSpec, WorkloadSpec
from sova.model.schema import InputError
from sova.model.trace_sets import trace_set
from sova.sim.engine import Simulator
from sova.sim.records import SimError
from sova.sim.workload_kinds.planetlab import idle_departures
from sova.sim.workload_kinds.trace_replay import trace_files


def _archive(path, members: list[str]) -> str:
    """A .tar.gz of PlanetLab-like traces, its members in the order given."""
    with tarfile.open(path, "w:gz") as tar:
        for number, name in enumerate(members):
            data = f"{10 * (number + 1)}\n".encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def test_an_archive_lists_its_members_in_their_order_or_sorted_by_name(tmp_path):
    archive = _archive(tmp_path / "day.tar.gz", ["c", "a", "b"])
    assert trace_set(archive, "listing") == [f"{archive}:c", f"{archive}:a", f"{archive}:b"]
    assert trace_set(archive) == [f"{archive}:a", f"{archive}:b", f"{archive}:c"]


def test_a_directory_lists_its_files_as_the_file_system_does_or_sorted_by_name(tmp_path):
    for name in ("vm-b", "vm-c", "vm-a", ".hidden"):
        (tmp_path / name).write_text("1\n")
    listed = [name for name in os.listdir(tmp_path) if not name.startswith(".")]  # readdir's order, as Java's
    assert trace_set(str(tmp_path), "listing") == [str(tmp_path / name) for name in listed]
    assert trace_set(str(tmp_path)) == [str(tmp_path / name) for name in ("vm-a", "vm-b", "vm-c")]


def test_a_workload_in_listing_order_gives_the_kth_vm_the_kth_listed_trace(tmp_path):
    archive = _archive(tmp_path / "day.tar.gz", ["c", "a", "b"])
    listing = WorkloadSpec("planetlab", "vm*", {"file": archive, "order": "listing"})
    assert [f["file"].rpartition(":")[2] for f in trace_files(listing, 3)] == ["c", "a", "b"]
    by_name = WorkloadSpec("planetlab", "vm*", {"file": archive})
    assert [f["file"].rpartition(":")[2] for f in trace_files(by_name, 2)] == ["a", "b"]


def test_an_unknown_order_is_refused_with_the_choices(tmp_path):
    archive = _archive(tmp_path / "day.tar.gz", ["a"])
    with pytest.raises(
        InputError, match=r"\[\[workloads\]\] #1.order: got 'sorted'; expected one of 'name', 'listing'"
    ):
        make_scenario(
            vms=[{"name": "vm1", "host": "h1"}],
            workloads=[{"vm": "vm*", "kind": "planetlab", "file": archive, "order": "sorted"}],
        )


# vm_memory: 4-GiB hosts and 1,740-MiB VMs (CloudSim's largest type): first fit at creation puts two on h1
# (3,480 MiB, 616 MiB left) and the third on h2
PACKED = {
    "hosts": [{"name": "h{i}", "count": 2, "memory": "4096MiB", "dom0_memory": 0}],
    "vms": [{"name": "v{i}", "count": 3, "host": "first-fit", "memory": "1740MiB"}],
}


def _rig(vm_memory: str):
    sim = Simulator(make_scenario(simulator={"vm_memory": vm_memory}, **PACKED))
    driver, knowledge = SimDriver(sim), Knowledge()
    knowledge.add(driver.observe())
    return sim, driver, knowledge, Executor(driver, ControlSpec(), "auto")


def test_vms_pack_by_memory_at_creation_whatever_they_hold_later():
    for vm_memory in ("held", "creation"):
        _, driver, _, _ = _rig(vm_memory)
        snap = driver.observe()
        assert [snap.hosts[h] for h in snap.vm_host] == ["h1", "h1", "h2"]
        assert snap.vm_memory.tolist() == [1740.0] * 3  # configured memory is still reported (MMT reads it)


def test_a_held_vm_needs_its_memory_where_it_moves_so_the_third_does_not_fit():
    sim, driver, knowledge, executor = _rig("held")
    assert driver.observe().committed_memory().tolist() == [3480.0, 1740.0]
    executor.submit([Migrate(vm="v3", dst="h1")], knowledge)
    (rejected,) = [e for e in executor.audit.entries if e.event == "rejected"]
    assert "h1 has 616 MiB free; v3 needs 1740 MiB" in rejected.message
    with pytest.raises(SimError, match="h1 has 616 MiB free, v3 needs 1740 MiB"):
        sim.start_migration(2, 0)


def test_where_vms_hold_memory_only_at_creation_a_third_moves_onto_a_host_with_616_mib_free():
    sim, driver, knowledge, executor = _rig("creation")
    snap = driver.observe()
    assert snap.committed_memory().tolist() == [0.0, 0.0] and snap.memory_held().tolist() == [0.0] * 3
    executor.submit([Migrate(vm="v3", dst="h1")], knowledge)
    for _ in range(120):  # 1,740 MiB over 1 Gb/s: about 15 s of pre-copy
        sim.step()
        knowledge.add(driver.observe())
        executor.tick(knowledge)
    finished = [e for e in executor.audit.entries if e.event == "finished"]
    assert [e.status for e in finished] == [OK]
    assert [driver.observe().hosts[h] for h in driver.observe().vm_host] == ["h1", "h1", "h1"]


def test_a_restart_boots_a_vm_so_it_needs_its_configured_memory_even_where_running_vms_hold_none():
    knowledge = _rig("creation")[2]
    ledger = Ledger.of([], knowledge)
    snap = knowledge.latest
    assert ledger.memory_short(snap, "v3", "h1") is None  # moving: it needs what it holds, none
    small = dataclasses.replace(snap, host_memory=np.array([1000.0, 4096.0]))
    assert ledger.memory_short(small, "v3", "h1", booting=True) == "h1 has 1000 MiB free; v3 needs 1740 MiB"


# leave = "idle": CloudSim deletes a VM whose interpolated demand at the update after sample k (k >= 1) is 0,
# i.e. samples k and k + 1 both 0, the last sample counted twice
def test_a_vm_leaves_at_the_first_sample_after_the_first_that_reads_zero_twice_running():
    cpu = np.array([[0.05, 0.0, 0.0, 0.03], [0.0, 0.0, 0.04, 0.0], [0.04, 0.0, 0.03, 0.02], [0.0, 0.0, 0.0, 0.0]])
    leave = np.array(["idle", "idle", "idle", "never"], dtype=object)
    times = idle_departures(cpu, np.full(4, 300.0), np.zeros(4), leave)
    # row 1: k = 1; row 2: not k = 0 (CloudSim's first update is after sample 1), but k = 3, its last 0 repeated;
    # row 3: never two zeros running; row 4: idle all along but told never to leave
    assert times.tolist() == [300.0, 900.0, np.inf, np.inf]


def test_a_planetlab_vm_told_to_leave_when_idle_is_deleted_then_and_no_longer_reported(tmp_path):
    for name, samples in (("busy", [20, 30, 40, 50, 60]), ("quiet", [10, 0, 0, 5, 5])):
        (tmp_path / name).write_text("\n".join(str(s) for s in samples) + "\n")
    scenario = make_scenario(
        scenario={"duration": 1200, "step": 300},
        hosts=[{"name": "h1", "cores": 2}],
        vms=[{"name": "vm{i}", "count": 2, "host": "h1"}],
        workloads=[{"vm": "vm*", "kind": "planetlab", "file": str(tmp_path), "leave": "idle"}],
    )
    sim = Simulator(scenario)
    driver = SimDriver(sim)
    while sim.t < 1200 - 1e-9:
        sim.step()
    gone = [(r.vm, r.time, r.event) for r in sim.lifecycle.log if r.event == "deleted"]
    assert gone == [("vm2", 300.0, "deleted")]  # vm2 replays 'quiet' (name order): 0 at samples 1 and 2
    assert driver.observe().vms == ("vm1",)


# reserve = "memory-and-cpu": CloudSim reserves a new VM's full MIPS where it creates it, on a core at least
# as fast as its vCPU; a G4 host has 2 cores of 1,860 MIPS, a G5 2 of 2,660, 4,096 MiB each
def _placed(reserve: str) -> dict[str, str]:
    scenario = make_scenario(
        hosts=[
            {"name": "g4", "cores": 2, "mips": 1860, "memory": "4096MiB", "dom0_memory": 0},
            {"name": "g5", "cores": 2, "mips": 2660, "memory": "4096MiB", "dom0_memory": 0},
        ],
        vms=[
            {"name": "a{i}", "count": 2, "mips": 2500, "memory": "870MiB", "host": "first-fit", "reserve": reserve},
            {"name": "b1", "mips": 1000, "memory": "1740MiB", "host": "first-fit", "reserve": reserve},
        ],
    )
    return {vm.name: vm.host for vm in scenario.vms}


def test_first_fit_by_memory_puts_all_three_on_the_first_host():
    assert _placed("memory") == {"a1": "g4", "a2": "g4", "b1": "g4"}  # 870 + 870 + 1,740 = 3,480 MiB


def test_first_fit_reserving_cpu_puts_the_fast_vms_on_cores_fast_enough_and_the_slow_one_first():
    # a1, a2: 2,500 MIPS vCPUs need G5's 2,660-MIPS cores (5,000 of its 5,320); b1's 1,000 fit G4's 3,720
    assert _placed("memory-and-cpu") == {"a1": "g5", "a2": "g5", "b1": "g4"}


def test_a_vm_no_host_has_the_mips_for_is_reported_as_unplaced():
    with pytest.raises(InputError, match="found no host with enough free memory \\(or CPU, where they reserve it\\)"):
        make_scenario(
            hosts=[{"name": "g4", "cores": 2, "mips": 1860, "memory": "4096MiB", "dom0_memory": 0}],
            vms=[{"name": "a1", "mips": 2500, "memory": "870MiB", "host": "first-fit", "reserve": "memory-and-cpu"}],
        )


# initial_placement = "least-power": PABFD at creation. G4: 2 x 1,860 MIPS on 86-117 W; G5: 2 x 2,660 on
# 93.7-135 W (SPECpower, 10 % steps, linear between)
def _started(initial_placement: str) -> list[str]:
    scenario = make_scenario(
        simulator={"initial_placement": initial_placement},
        hosts=[
            {
                "name": "g4",
                "cores": 2,
                "mips": 1860,
                "memory": "4096MiB",
                "dom0_memory": 0,
                "power_model": "hp-ml110-g4",
            },
            {
                "name": "g5",
                "cores": 2,
                "mips": 2660,
                "memory": "4096MiB",
                "dom0_memory": 0,
                "power_model": "hp-ml110-g5",
            },
        ],
        vms=[{"name": "v{i}", "count": 3, "mips": 1000, "memory": "870MiB", "host": "first-fit"}],
    )
    snap = SimDriver(Simulator(scenario)).observe()
    return [snap.hosts[h] for h in snap.vm_host]


def test_vms_start_where_the_scenario_puts_them_by_default():
    assert _started("scenario") == ["g4", "g4", "g4"]  # first fit by memory: 3 x 870 MiB on the first host


def test_least_power_spreads_vms_to_the_host_whose_power_rises_least():
    # v1: G4 at 1,000 / 3,720 = 26.9 % draws 94.95 W (+8.95), G5 at 18.8 % 100.52 W (+6.82): G5.
    # v2: G4 +8.95; G5 at 37.6 % 108.8 W (+15.1): G4. v3: G4 at 53.8 % 103.5 W (+17.5); G5 +15.1: G5
    assert _started("least-power") == ["g5", "g4", "g5"]
