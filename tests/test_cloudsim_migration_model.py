"""CloudSim 3.0.3's migration model (``[simulator] migration_model = "cloudsim"``) on a case worked out by
hand: one VM at half a core, 1,000 MB of memory, moved between two one-core hosts with 1 Gb/s NICs, in a
step of 300 s. CloudSim takes RAM / (BW / 2) = 1,000 MB / 62.5 MB/s = 16 s; meanwhile the VM runs at 90 %
on its source, which is powered as if it ran in full, and its destination is charged 10 % of it and counts
as violating the SLA; from second 16 the VM runs on its destination and the emptied source draws nothing."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import make_scenario
from sova.sim.engine import Simulator
from sova.sim.step_moves import Move, StepState, host_pieces

CURVE = [100 + 10 * tenth for tenth in range(11)]  # watts at 0, 10, ..., 100 %: P(u) = 100 + 100 u


def _moved(model: str) -> Simulator:
    scenario = make_scenario(
        scenario={"duration": 300, "step": 300},
        hosts=[
            {
                "name": "h{i}",
                "count": 2,
                "cores": 1,
                "mips": 1000,
                "memory": "4096MB",
                "dom0_memory": 0,
                "power_model": "custom",
                "power_curve": CURVE,
                "sleep_power": 0.0,
                "nic": {"bandwidth": "1Gb/s"},
            }
        ],
        vms=[{"name": "v1", "host": "h1", "vcpus": 1, "memory": "1000MB"}],
        workloads=[{"vm": "v1", "kind": "lookbusy", "util": 0.5}],
        simulator={"migration_model": model, "idle_guest_cpu": 0.0},
    )
    sim = Simulator(scenario)
    sim.start_migration(0, 1)
    sim.step()
    return sim


def test_a_cloudsim_migration_takes_its_memory_over_half_the_destination_nic():
    sim = _moved("cloudsim")
    [record] = sim.migrations.log
    assert record.finished - record.started == pytest.approx(16.0)
    assert record.status == "completed" and record.downtime == 0.0 and sim.vms.host[0] == 1
    assert not sim.network.flows  # off the network: no flow carries it


def test_the_source_draws_the_vm_in_full_until_it_leaves_then_nothing_and_the_destination_a_tenth_first():
    sim = _moved("cloudsim")
    # h1: P(0.5) = 150 W for 16 s, then empty (its sleep power, 0); h2: P(0.05) = 105 W for 16 s, P(0.5) after
    assert sim.sensors.energy_j == pytest.approx([150 * 16, 105 * 16 + 150 * 284])


def test_the_destination_violates_the_sla_while_the_vm_migrates_in_and_the_vm_loses_a_tenth_meanwhile():
    sensors = _moved("cloudsim").sensors
    assert sensors.host_active_s == pytest.approx([16, 300])
    assert sensors.host_short_s == pytest.approx([0, 16])
    assert sensors.vm_cpu_asked == pytest.approx([0.5 * 300])
    assert sensors.vm_migration_loss == pytest.approx([0.1 * 0.5 * 16])
    assert sensors.counters["cpu_time"] == pytest.approx([0.5 * 300 - 0.1 * 0.5 * 16])


def test_pre_copy_stays_the_default_and_sends_over_a_flow():
    sim = _moved("pre-copy")
    [record] = sim.migrations.log
    assert len(sim.network.flows) == 1 and record.bytes >= 1000e6
    assert record.finished - record.started == pytest.approx(1000e6 * 8 / sim.network.nic_cap[0], rel=0.05)


def test_pieces_cut_a_host_step_where_moves_begin_and_end():
    # host 0 holds VMs 0 (0.5 core) and 1 (0.2); VM 1 moves to host 1 over [10, 40) of a 100-s step
    state = StepState(
        ran_on=np.array([0, 0]),
        vm_given=np.array([0.5, 0.2]),
        vm_asked=np.array([0.5, 0.2]),
        running=np.array([True, True]),
        dom0=np.zeros(2),
        cores=np.ones(2),
    )
    pieces = host_pieces([Move(1, 0, 1, 10.0, 40.0, True)], state, 100.0)
    by_host = {int(h): [] for h in pieces.host}
    for host, seconds, busy, active, short in zip(
        pieces.host, pieces.seconds, pieces.busy, pieces.active, pieces.short, strict=True
    ):
        by_host[int(host)].append((seconds, round(busy, 9), bool(active), bool(short)))
    assert by_host[0] == [(40.0, 0.7, True, False), (60.0, 0.5, True, False)]
    assert by_host[1] == [(10.0, 0.0, False, False), (30.0, 0.02, True, True), (60.0, 0.2, True, False)]
