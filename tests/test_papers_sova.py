"""The Sova paper's experiments, run from their scenario files under scenarios/papers/sova/."""

import pytest

from helpers import ROOT
from sova.experiments.scenario_runs import run_scenario
from sova.model.sweep import load_scenario

PAPERS = ROOT / "scenarios" / "papers" / "sova"


@pytest.fixture(scope="module")
def table1():
    (r,) = run_scenario(load_scenario(PAPERS / "table1-intensity.toml"))
    f = r.summary["intensity"]
    return {k: [f[f"vm{i}"][k] for i in range(1, 16)] for k in ("IF", "NF", "io_degree", "net_degree")}


def test_table1_cpu_only_vms_have_smaller_if_than_every_netperf_vm(table1):
    assert max(table1["IF"][0:5]) < min(table1["IF"][5:10])


def test_table1_cpu_only_vms_have_no_network_factor(table1):
    assert table1["NF"][0:5] == [0.0] * 5 and table1["net_degree"][0:5] == [0.0] * 5


def test_table1_network_factor_grows_with_the_netperf_share(table1):
    for group in (slice(5, 10), slice(10, 15)):
        nf = table1["NF"][group]
        assert nf == sorted(nf) and nf[0] < nf[-1]
        assert table1["net_degree"][group] == sorted(table1["net_degree"][group])


def test_table1_hybrid_io_factor_falls_as_the_share_grows(table1):
    hybrid = table1["IF"][10:15]
    assert hybrid == sorted(hybrid, reverse=True) and hybrid[0] > hybrid[-1]


def test_table1_io_degree_matches_the_sriov_papers_cpu_column(table1):
    """SR-IOV paper Table 2: lookbusy VMs 81.4, 60.0, 45.5, 23.6, 7.8 (within 10 points here)."""
    assert table1["io_degree"][0:5] == pytest.approx([81.4, 60.0, 45.5, 23.6, 7.8], abs=10)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_table2_vf_holders_are_exactly_the_papers(seed):
    (r,) = run_scenario(load_scenario(PAPERS / "table2-vf-scheduling.toml"), ["dsriov"], seed=seed)
    assert r.vf_holders(9.9 * 60) == ["vm1", "vm6", "vm7", "vm8"]
    assert r.vf_holders(19.9 * 60) == ["vm1", "vm3", "vm5", "vm6"]
    assert r.vf_holders(29.9 * 60) == ["vm1", "vm4", "vm5", "vm6"]
    assert len(r.vf_events) == 10  # 4 first plugs, then 3 hand-overs of 2 events each: no flapping


@pytest.fixture(scope="module")
def table3():
    (r,) = run_scenario(load_scenario(PAPERS / "table3-migration.toml"), ["sova"], seed=1)
    return r


def _stage_means(r, host: str) -> list[float]:
    """The host's mean NIC utilisation in each 10-minute stage."""
    t, util = r.series["time"], r.series[f"nic_tx:{host}"]
    return [float(util[(t >= s * 600) & (t < (s + 1) * 600)].mean()) for s in range(3)]


def test_table3_co_located_netperf_loads_add_as_the_paper_counts_them(table3):
    """§5.2 counts a host's load as the sum of its VMs' netperf shares (HM1 in stage 1: 50 % + 30 %). On
    the paper's Xen hosts a stream is held to its vif's netback thread, so two VMs' streams add up."""
    hm1, hm2, hm3 = (_stage_means(table3, h) for h in ("HM1", "HM2", "HM3"))
    assert hm1[0] / hm3[0] == pytest.approx((0.5 + 0.3) / 0.2, rel=0.05)
    assert hm2[0] / hm3[0] == pytest.approx((0.3 + 0.3) / 0.2, rel=0.05)
    assert hm1[1] / hm3[1] == pytest.approx((0.4 + 0.7) / 0.4, rel=0.05)  # stage 2, VM1 still on HM1


@pytest.mark.xfail(
    strict=True,
    reason="a netperf stream through a vif's netback thread carries 4.94 Gb/s, 52 % of the port, so the "
    "paper's 80 % hosts measure 42 % and none crosses alpha = 0.7: nothing moves (docs/policies.md)",
)
def test_table3_stages_vm1_to_hm3_then_nothing_then_vm1_to_hm2(table3):
    moves = [(m.vm, m.src, m.dst, m.started // 600) for m in table3.migrations if m.moved]
    assert moves == [("VM1", "HM1", "HM3", 0), ("VM1", "HM3", "HM2", 2)]


@pytest.mark.parametrize("seed", range(1, 7))
def test_table3_no_vm_moves_twice_within_its_residence_time(seed):
    (r,) = run_scenario(load_scenario(PAPERS / "table3-migration.toml"), ["sova"], seed=seed)
    last: dict[str, float] = {}
    for m in r.migrations:
        assert m.started - last.get(m.vm, -1e9) >= 600
        last[m.vm] = m.finished


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sec53_vfs_then_vf_handover_then_vm1_migrates_with_its_vf_revoked(seed):
    (r,) = run_scenario(load_scenario(PAPERS / "sec53-combination.toml"), ["sova"], seed=seed)
    ev = [(vm, event) for _, vm, host, event in r.vf_events if host == "HM1"]
    assert set(r.vf_holders(60)) >= {"VM3", "VM4"}  # the VFs go first to VM3 and VM4
    handover = ev.index(("VM3", "detached"))
    assert ev[handover + 1] == ("VM1", "attached")  # VM3's VF goes to VM1
    (move,) = r.migrations  # later HM1 is a hotspot and VM1 moves to HM2, once
    assert (move.vm, move.src, move.dst, move.status) == ("VM1", "HM1", "HM2", "completed")
    revoked = next(t for t, vm, host, event in r.vf_events if vm == "VM1" and event == "detached")
    assert revoked <= move.started  # its VF was revoked first


def test_sec54_algorithm_2_as_the_paper_gives_it_trades_vms_between_saturated_hosts():
    """The contrast to the steady test: without it the hosts trade VMs back and forth at 1,400 req/s."""
    from dataclasses import replace

    from sova.control.profiles import check_profile
    from sova.model.sweep import load_runs

    values, runs = load_runs(PAPERS / "sec54-overall.toml", check_profile)
    scenario = dict(zip(values.values, runs, strict=True))[1400]
    plain = replace(scenario.profiles["sova"], params={"dsriov-vlm": {"steady": False}})
    (r,) = run_scenario(replace(scenario, profiles={"sova": plain}), ["sova"])
    moves = [(m.src, m.dst, m.started) for m in r.migrations if m.moved]
    back = [a for a in moves for b in moves if (b[0], b[1]) == (a[1], a[0]) and 0 < b[2] - a[2] < 600]
    assert len(moves) >= 20 and back
