"""A cluster as a scenario: the observed-demand file, the `observed` workload kind that replays and forecasts it,
and `sova snapshot export` from a simulated run (the replay checked against the run it came from)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import hypothesis.strategies as st
import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings

from helpers import ROOT, make_scenario
from sova.cli import main as cli_main
from sova.cli.run import load
from sova.drivers.sim import SimDriver
from sova.experiments.scenario_runs import run_profile
from sova.experiments.what_if import alternatives, run_alternatives
from sova.model.actions import Migrate
from sova.model.cluster_snapshot import ExportSettings, SnapshotError, _rates, observed_demand
from sova.model.knowledge import Knowledge
from sova.model.observed_demand import VM_COLUMNS, DemandFileError, ObservedDemand, read_demand, write_demand
from sova.model.schema import InputError
from sova.sim.engine import Simulator
from sova.sim.workload_kinds.observed import Observed

QUICKSTART = ROOT / "scenarios" / "quickstart.toml"


def _demand(cpu: np.ndarray, interval: float = 10.0, flows: np.ndarray | None = None) -> ObservedDemand:
    vms = tuple(f"v{k + 1}" for k in range(len(cpu)))
    series = {column: np.zeros_like(cpu) for column in VM_COLUMNS}
    series["cpu"] = cpu
    if flows is None:
        return ObservedDemand(interval, 100.0, vms, series)
    return ObservedDemand(interval, 100.0, vms, series, ("v1",), ("v2",), flows)


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda vms: st.lists(
            st.lists(st.floats(0, 1e9, allow_nan=False), min_size=3, max_size=3), min_size=vms, max_size=vms
        )
    ),
    st.floats(0.5, 60),
)
def test_a_demand_file_reads_back_what_was_written(tmp_path_factory, rows, interval):
    path = tmp_path_factory.mktemp("demand") / "d.parquet"
    cpu = np.array(rows, dtype=float)
    flows = np.arange(3, dtype=float)[None, :] if len(rows) > 1 else None
    write_demand(path, _demand(cpu, interval, flows))
    back = read_demand(path)
    assert back.vms == tuple(f"v{k + 1}" for k in range(len(rows))) and back.interval == interval
    assert np.array_equal(back.series["cpu"], cpu) and back.samples == 3
    if flows is not None:
        assert (back.flow_src, back.flow_dst) == (("v1",), ("v2",)) and np.array_equal(back.flow_bits, flows)


@pytest.mark.parametrize("bad", [np.nan, -1.0, np.inf])
def test_a_demand_file_with_a_bad_value_names_its_column_vm_and_sample(tmp_path, bad):
    path = tmp_path / "d.parquet"
    cpu = np.ones((2, 4))
    cpu[1, 2] = bad
    write_demand(path, _demand(cpu))
    with pytest.raises(DemandFileError, match=r"cpu of v2 at sample 2 is .*expected a finite number, not negative"):
        read_demand(path)


def test_a_parquet_file_sova_did_not_write_is_refused_with_what_was_expected(tmp_path):
    path = tmp_path / "d.parquet"
    write_demand(path, _demand(np.ones((1, 2))))
    pq.write_table(pq.read_table(path).replace_schema_metadata({}), path)
    with pytest.raises(DemandFileError, match=r"no sova\.observed metadata; expected a file `sova snapshot export`"):
        read_demand(path)
    with pytest.raises(DemandFileError, match="expected an observed-demand Parquet file"):
        read_demand(tmp_path / "absent.parquet")


def _observed_sim(tmp_path, cpu: list[float], after: str, replay: bool = False) -> Simulator:
    path = tmp_path / "d.parquet"
    write_demand(path, _demand(np.array([cpu])))
    scenario = make_scenario(
        hosts=[{"name": "h1", "cores": 8}],
        storage=[{"name": "s"}],
        vms=[{"name": "v1", "host": "h1", "vcpus": 4}],
        workloads=[{"vm": "v*", "kind": "observed", "file": str(path), "after": after, "replay": replay}],
        simulator={"idle_guest_cpu": 0.0},  # else taken out of the observed CPU (test below)
    )
    return Simulator(scenario)


@pytest.mark.parametrize("after", ["last", "mean", "ar"])
def test_past_the_window_the_observed_kind_forecasts_as_it_is_told(tmp_path, after):
    cpu = [1.0, 3.0, 2.0, 3.5, 1.5, 3.0]
    sim = _observed_sim(tmp_path, cpu, after)
    group = sim.workloads.groups["observed"]
    mu = np.mean(cpu)
    d = np.array(cpu) - mu
    phi = (d[1:] * d[:-1]).sum() / (d**2).sum()
    for k, t in enumerate([0.0, 10.0, 25.0]):  # the run starts where the window ends: k+1 samples on
        expected = {"last": cpu[-1], "mean": mu, "ar": mu + phi ** (k + 1) * (cpu[-1] - mu)}[after]
        assert Observed._at(group, "cpu", t)[0] == pytest.approx(expected)


def test_a_replay_starts_at_the_windows_start_and_then_forecasts(tmp_path):
    sim = _observed_sim(tmp_path, [1.0, 3.0, 2.0], "last", replay=True)
    group = sim.workloads.groups["observed"]
    assert [Observed._at(group, "cpu", t)[0] for t in (0, 9.9, 10, 25, 30, 300)] == [1, 1, 3, 2, 2, 2]


def test_a_replayed_snapshot_gives_each_host_the_cpu_the_run_it_came_from_had(tmp_path):
    """The simulator against itself: quickstart's default profile run to 20 min, its last 10 min exported and
    replayed on the same placement. Each host's mean CPU over the window comes back within 5 % (measured:
    0.0, 1.4, 3.2 and 2.3 %; before the guest's network CPU was taken out of the observed CPU, 9-26 %)."""
    at, window = 1200, 600
    out = tmp_path / "c.toml"
    assert cli_main(["snapshot", "export", "--run", str(QUICKSTART), "--profile", "default", "--at", str(at),
                     "--window", str(window), "--out", str(out)]) == 0  # fmt: skip
    text = out.read_text().replace('after = "last"', 'after = "last", replay = true')
    out.write_text(text.replace("duration = 1800.0", f"duration = {window}.0"))
    _, (original,) = load(QUICKSTART)
    _, (replay,) = load(out)
    before, again = run_profile(original, "default"), run_profile(replay, "nothing")
    for host in ("hm1", "hm2", "hm3", "hm4"):
        seen = before.series[f"cpu:{host}"][at - window : at].mean()
        assert again.series[f"cpu:{host}"].mean() == pytest.approx(seen, rel=0.05), host
        seen_tx = before.series[f"nic_tx:{host}"][at - window : at].mean()
        assert again.series[f"nic_tx:{host}"].mean() == pytest.approx(seen_tx, rel=0.05), host


def test_an_export_keeps_hosts_vms_placement_and_the_profile_that_ran(tmp_path):
    out = tmp_path / "c.toml"
    assert cli_main(["snapshot", "export", "--run", str(QUICKSTART), "--profile", "threshold", "--at", "12min",
                     "--interval", "5", "--out", str(out)]) == 0  # fmt: skip
    _, (snapshot,) = load(out)
    _, (original,) = load(QUICKSTART)
    assert [h.name for h in snapshot.hosts] == [h.name for h in original.hosts]
    assert {v.name: (v.vcpus, v.memory) for v in snapshot.vms} == {v.name: (v.vcpus, v.memory) for v in original.vms}
    assert list(snapshot.profiles) == ["nothing", "threshold"]
    assert snapshot.profiles["threshold"].params == original.profiles["threshold"].params
    demand = read_demand(tmp_path / "c.demand.parquet")
    assert demand.interval == 5 and demand.samples == 120 and set(demand.vms) == {v.name for v in snapshot.vms}
    burn = demand.row("burn1")
    assert demand.series["cpu"][burn, -1] == pytest.approx(3.0, abs=0.1)  # after 10 min the burners are flat out


def test_export_refuses_to_replace_a_file_and_checks_its_arguments_before_running(tmp_path, capsys):
    out = tmp_path / "c.toml"
    out.write_text("mine")
    args = ["snapshot", "export", "--run", str(QUICKSTART), "--at", "12min", "--out", str(out)]
    assert cli_main(args) == 2
    assert out.read_text() == "mine" and not (tmp_path / "c.demand.parquet").exists()
    assert "exists; expected a new file (or --force" in capsys.readouterr().err
    assert cli_main([*args[:-1], str(tmp_path / "d.toml"), "--at", "2h"]) == 2
    assert "past" in capsys.readouterr().err and not (tmp_path / "d.toml").exists()
    assert cli_main([*args[:-1], str(tmp_path / "d.toml"), "--profile", "nope"]) == 2
    assert "'nope' is no profile" in capsys.readouterr().err


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("snapshot") / "cluster.toml"
    assert cli_main(["snapshot", "export", "--run", str(QUICKSTART), "--profile", "threshold", "--at", "12min",
                     "--out", str(out)]) == 0  # fmt: skip
    return out


def test_what_if_answers_each_alternative_against_doing_nothing(snapshot, capsys):
    args = ["what-if", str(snapshot), "--horizon", "10min", "--drain", "hm2", "--add-vm", "big1:4:4GiB:4", "--json"]
    assert cli_main(args) == 0
    reply = json.loads(capsys.readouterr().out)
    names = [alternative["name"] for alternative in reply["alternatives"]]
    assert names == ["nothing", "as-is", "drain-hm2", "add-big1"] and reply["horizon"] == 600
    base, *others = reply["alternatives"]
    assert "difference" not in base and base["forecast"]["migrations"] == 0
    for alternative in others:
        for key, value in alternative["forecast"].items():
            if value is not None and base["forecast"][key] is not None:
                assert alternative["difference"][key] == pytest.approx(value - base["forecast"][key])
            elif value is not None:  # a quantity doing nothing has no value of (the CPU after a move)
                assert alternative["difference"][key] is None
        assert alternative["tradeoff"].startswith(
            ("Against nothing", "as-is and nothing", f"{alternative['name']} and")
        )
    drain = others[1]["forecast"]
    assert drain["migrations"] >= 3 and drain["migration_seconds"] > 0  # hm2's VMs leave it
    assert drain["source_cpu_after"] < 0.05 and base["forecast"]["source_cpu_after"] is None  # hm2 left empty
    moved = others[1]["moves"]  # one by one: what the migration time stands on
    assert base["moves"] == [] and len(moved) == drain["migrations"]
    assert {move["src"] for move in moved} == {"hm2"} and all(move["bytes"] > 0 for move in moved)
    completed = [move["seconds"] for move in moved if move["status"] == "completed"]
    assert sum(completed) == pytest.approx(drain["migration_seconds"], abs=0.01)
    assert others[2]["forecast"]["energy_kwh"] > base["forecast"]["energy_kwh"]  # four more busy cores


def test_what_if_prints_a_table_and_a_tradeoff_per_alternative(snapshot, capsys):
    assert cli_main(["what-if", str(snapshot), "--horizon", "2min", "--profile", "default"]) == 0
    printed = capsys.readouterr().out
    assert "what-if over 120 s" in printed and "profile-default" in printed and "as-is" in printed


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--drain", "hm9"], "'hm9' is no host of the snapshot"),
        (["--profile", "nope"], "'nope' is no profile of the snapshot nor a built-in one"),
        (["--add-vm", "web1:2:1GiB"], "'web1' is empty or a VM of the snapshot already"),
        (["--add-vm", "x9:0:1GiB"], "VCPUS >= 1"),
        (["--add-vm", "x9:2:lots"], "expected NAME:VCPUS:MEMORY[:CPU]"),
    ],
)
def test_what_if_refuses_an_alternative_it_cannot_run_and_says_why(snapshot, capsys, args, said):
    assert cli_main(["what-if", str(snapshot), *args]) == 2
    assert said in capsys.readouterr().err


def test_what_if_needs_one_source(capsys):
    assert cli_main(["what-if"]) == 2
    assert "expected a SNAPSHOT file, --socket PATH, --api URL or --run SCENARIO" in capsys.readouterr().err
    assert cli_main(["what-if", "--run", str(QUICKSTART)]) == 2
    assert "--run and --at go together" in capsys.readouterr().err


def test_the_reader_warns_of_a_vm_without_series_and_refuses_a_series_the_file_lacks(tmp_path):
    path = tmp_path / "d.parquet"
    write_demand(path, _demand(np.ones((1, 3))))
    base = {
        "storage": [{"name": "s"}],
        "vms": [{"name": "v1", "host": "h1"}, {"name": "v2", "host": "h1"}],
    }
    scenario = make_scenario(**base, workloads=[{"vm": "v*", "kind": "observed", "file": str(path)}])
    assert any("v2 have no series in d.parquet: not observed" in warning.message for warning in scenario.warnings)
    with pytest.raises(InputError, match="'zz' is no series of"):
        make_scenario(**base, workloads=[{"vm": "v1", "kind": "observed", "file": str(path), "series": "zz"}])


def _replaying(tmp_path, demand: ObservedDemand) -> Simulator:
    """A simulator of one host whose VMs (as many as `demand` has) replay `demand`."""
    path = tmp_path / "d.parquet"
    write_demand(path, demand)
    scenario = make_scenario(
        hosts=[{"name": "h1", "cores": 8}],
        storage=[{"name": "s"}],
        vms=[{"name": name, "host": "h1", "vcpus": 2} for name in demand.vms],
        workloads=[{"vm": "v*", "kind": "observed", "file": str(path)}],
    )
    return Simulator(scenario)


def test_only_vms_seen_on_the_network_or_the_disk_get_flows_and_theirs_carry_what_was_seen(tmp_path):
    demand = _demand(np.array([[1.0, 1.0], [0.5, 0.5], [0.2, 0.2]]))
    demand.series["tx_bits"][1] = [0.0, 4e8]  # v2 sent, late in the window; v1 and v3 never did
    demand.series["rx_bits"][2] = [1e6, 0.0]  # v3 received once
    demand.series["write_iops"][2] = [0.0, 50.0]
    demand.series["write_bps"][2] = [0.0, 50 * 4096.0]
    sim = _replaying(tmp_path, demand)
    group = sim.workloads.groups["observed"]
    src, dst = sim.network.flow_vm_ends()
    assert [src[flow] for flow in group.flows["tx"]] == [1] and [dst[flow] for flow in group.flows["rx"]] == [2]
    assert list(np.flatnonzero(sim.network.io_flow_read >= 0)) == [2]  # v3 alone wrote
    sim.step()
    assert sim.network.rate[group.flows["tx"][0]] == pytest.approx(4e8)  # the last sample, held
    assert sim.network.rate[group.flows["rx"][0]] == 0.0


def test_a_vm_seen_waiting_for_its_ios_replays_them_in_a_closed_loop_of_the_depth_it_had(tmp_path):
    demand = _demand(np.array([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]))
    demand.series["read_iops"][:] = 400.0
    demand.series["read_bps"][:] = 400 * 4096.0
    demand.series["io_outstanding"][0] = [1.02, 0.97]  # fio at iodepth 1: the counters' timing adds a little
    demand.series["io_outstanding"][1] = [2.4, 3.6]  # at most four at once
    sim = _replaying(tmp_path, demand)  # v3: its IOs' time not seen (a host without total_times): open loop
    group = sim.workloads.groups["observed"]
    streams = Observed().io(group, sim, 0.0, 1.0)
    assert list(streams.depth) == [1.0, 4.0, 0.0] and list(streams.iops) == [400.0] * 3


def test_a_demand_file_written_before_io_outstanding_reads_as_open_loop_io(tmp_path):
    path = tmp_path / "d.parquet"
    write_demand(path, _demand(np.array([[1.0, 2.0]])))
    table = pq.read_table(path)
    pq.write_table(table.drop_columns(["io_outstanding"]), path)
    assert read_demand(path).series["io_outstanding"].tolist() == [[0.0, 0.0]]


def test_flows_between_observed_vms_are_replayed_and_their_stack_cpu_is_not_counted_twice(tmp_path):
    path = tmp_path / "d.parquet"
    bits = np.array([[1e9, 2e9, 3e9]])
    write_demand(path, _demand(np.array([[1.0, 1.0, 1.0], [0.5, 0.5, 0.5]]), flows=bits))
    scenario = make_scenario(
        hosts=[{"name": "h1", "cores": 8}, {"name": "h2", "cores": 8}],
        storage=[{"name": "s"}],
        vms=[{"name": "v1", "host": "h1", "vcpus": 4}, {"name": "v2", "host": "h2", "vcpus": 4}],
        workloads=[{"vm": "v*", "kind": "observed", "file": str(path)}],
    )
    sim = Simulator(scenario)
    group = sim.workloads.groups["observed"]
    (flow,) = group.flows["peer"]
    src, dst = sim.network.flow_vm_ends()
    assert (src[flow], dst[flow]) == (0, 1)  # v1 -> v2
    assert Observed._at(group, "peer", 0.0, group.state["peer_row"])[0] == 3e9  # the last sample, held
    stack = sim.network.guest_cost_bit * bits[0]  # each end's network stack, at the observed rate
    idle = sim.params["idle_guest_cpu"]  # the timer ticks the simulator gives every guest
    assert group.series["cpu"][0] == pytest.approx(1.0 - stack - idle)
    assert group.series["cpu"][1] == pytest.approx(0.5 - stack - idle)


def _two_snapshots(tx: list[float], tx_wanted: list[float], flow_bytes: list[float]):
    """Snapshots 10 s apart of two idle VMs, the second with these byte counts (per VM; per flow v1 -> v2)."""
    scenario = make_scenario(
        hosts=[{"name": "h1"}, {"name": "h2"}], vms=[{"name": "v1", "host": "h1"}, {"name": "v2", "host": "h2"}]
    )
    old = SimDriver(Simulator(scenario)).observe()
    flows = {"flow_src": np.array([0]), "flow_dst": np.array([1])}
    old = dataclasses.replace(old, flow_bytes=np.zeros(1), **flows)
    counters = dataclasses.replace(
        old.counters, guest_tx_bytes=np.array(tx) * 10, guest_tx_wanted=np.array(tx_wanted) * 10
    )
    new = dataclasses.replace(old, time=old.time + 10, counters=counters, flow_bytes=np.array(flow_bytes) * 10, **flows)
    return old, new


def test_a_vms_traffic_to_outside_is_what_it_sent_less_what_went_to_other_vms():
    """libvirt's flow counters list only VM-to-VM pairs: what else a VM sent left the cluster."""
    old, new = _two_snapshots([10_000.0, 0.0], [10_000.0, 0.0], [1_000.0])
    rates = _rates(old, new)
    assert rates["tx_bits"][0] == pytest.approx(9_000 * 8) and rates["flows"][0] == pytest.approx(1_000 * 8)


def test_a_sender_held_back_asks_for_what_it_wanted_even_when_it_carried_nothing():
    old, new = _two_snapshots([0.0, 5_000.0], [1e8, 10_000.0], [0.0])
    rates = _rates(old, new)
    assert rates["tx_bits"][0] == pytest.approx(8e8)  # all of it to outside: no flow says where else
    assert rates["tx_bits"][1] == pytest.approx(10_000 * 8) and rates["tx_scale"][1] == pytest.approx(2.0)


def test_the_ios_in_flight_are_their_summed_time_per_second():
    old, new = _two_snapshots([0.0, 0.0], [0.0, 0.0], [0.0])
    new = dataclasses.replace(
        new, counters=dataclasses.replace(new.counters, blk_time=old.counters.blk_time + np.array([25.0, 0.0]))
    )
    assert list(_rates(old, new)["io_outstanding"]) == [2.5, 0.0]  # 25 s of IO time in 10 s: 2.5 in flight


def test_a_pending_plan_applied_at_the_start_runs_in_its_alternative(snapshot):
    _, (base,) = load(snapshot)
    home = next(vm.host for vm in base.vms if vm.name == "web1")
    elsewhere = next(host.name for host in base.hosts if host.name not in (home, "hm1"))  # hm1: the hot one
    chosen = alternatives(base, base.profiles["threshold"], plan=(Migrate(vm="web1", dst=elsewhere, reason="test"),))
    assert [alternative.name for alternative in chosen] == ["nothing", "as-is", "plan"]
    results = run_alternatives(base, chosen, 120.0)
    moved = [m.vm for m in results[2].migrations]
    assert "web1" in moved and "web1" not in [m.vm for m in results[0].migrations]


def _knowledge_at(times: list[float]) -> Knowledge:
    old, _ = _two_snapshots([0.0, 0.0], [0.0, 0.0], [0.0])
    knowledge = Knowledge()
    for t in times:
        knowledge.add(dataclasses.replace(old, time=t))
    return knowledge


def test_a_gap_wider_than_the_interval_is_refused_also_where_the_first_sample_starts():
    # 0.1 s apart but for one gap of 0.3 s, from 0.4 to 0.7
    times = [0.0, 0.1, 0.2, 0.3, 0.4, 0.7, 0.8, 0.9, 1.0]
    # four samples of 0.1 s: the first, from 0.6, starts in the gap (on the snapshot of 0.4), and reads nothing
    with pytest.raises(SnapshotError, match=r"up to 0\.3 s apart"):
        observed_demand(_knowledge_at(times), ExportSettings(window=0.4, interval=0.1))
    demand = observed_demand(_knowledge_at(times), ExportSettings(window=0.3, interval=0.1))  # after the gap
    assert demand.samples == 3
