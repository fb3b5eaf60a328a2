"""CloudSim's PlanetLab study (Beloglazov and Buyya, CCPE 2012) as scenarios/papers/cloudsim/planetlab.toml:
its hosts, VMs and profiles as CloudSim sets them up, NPA's energy by hand, and a day of consolidation."""

from __future__ import annotations

from collections import Counter

import pytest

from helpers import ROOT, SHARED_TRACES, needs_shared_traces
from sova.control.profiles import check_profile
from sova.experiments.scenario_runs import run_profile
from sova.model.sweep import load_runs

SCENARIO = ROOT / "scenarios" / "papers" / "cloudsim" / "planetlab.toml"
TRACES = SHARED_TRACES / "planetlab"
needs_planetlab = needs_shared_traces("planetlab")


def day(name: str = "20110303"):
    _, (scenario,) = load_runs(SCENARIO, check_profile, {"day": name})
    return scenario


def excerpt():
    """The study on the project's two PlanetLab files (scenarios/traces/planetlab) as its day: for what does
    not depend on the day's traces."""
    _, (scenario,) = load_runs(
        SCENARIO, check_profile, {"traces": str(ROOT / "scenarios" / "traces"), "day": "planetlab"}
    )
    return scenario


@needs_planetlab
def test_the_study_is_800_g4_and_g5_hosts_and_one_vm_per_trace_in_cloudsims_four_type_blocks():
    scenario = day()
    assert Counter(h.power_model for h in scenario.hosts) == {"hp-ml110-g4": 400, "hp-ml110-g5": 400}
    assert {(h.mips, h.cores, h.memory) for h in scenario.hosts} == {(1860, 2, 4096), (2660, 2, 4096)}
    # 1,052 files: four blocks of ceil(1052 / 4) = 263 VMs, in file-name order
    assert len(scenario.vms) == 1052 == len(list((TRACES / "20110303").iterdir()))
    types = Counter((v.mips, v.memory) for v in scenario.vms)
    assert types == {(2500, 870): 263, (2000, 1740): 263, (1000, 1740): 263, (500, 613): 263}
    assert [v.mips for v in scenario.vms[262:264]] == [2500, 2000]  # vm263 ends the first block
    # another day, another count: 898 files, blocks of 225 and the last of 223
    other = Counter(v.mips for v in day("20110306").vms)
    assert other == {2500: 225, 2000: 225, 1000: 225, 500: 223}


def test_the_profiles_are_cloudsims_npa_dvfs_and_every_detector_and_selection():
    names = set(excerpt().profiles)
    pairs = {f"{d}-{s}-{p}" for d, p in (("thr", 0.8), ("iqr", 1.5), ("mad", 2.5), ("lr", 1.2), ("lrr", 1.2))
             for s in ("mmt", "mc", "mu", "rs")}  # fmt: skip
    assert names == {"npa", "dvfs", *pairs}


@needs_planetlab
def test_npa_draws_every_hosts_full_power_all_day_as_the_paper_reports():
    summary = run_profile(day(), "npa").summary
    # 400 G4 at 117 W and 400 G5 at 135 W for 24 h: 100.8 kW x 24 h
    assert summary["energy_kwh"] == pytest.approx(400 * (117 + 135) * 24 / 1000) == pytest.approx(2419.2)
    assert summary["migrations"]["count"] == 0


@needs_planetlab
def test_a_day_of_thr_mmt_migrates_off_hot_hosts_and_keeps_the_emptied_ones_asleep():
    scenario = day()
    dvfs = run_profile(scenario, "dvfs").summary
    thr = run_profile(scenario, "thr-mmt-0.8").summary
    # DVFS: VMs start first-fit by memory and never move; the hosts they leave empty sleep at once
    assert dvfs["migrations"]["count"] == 0 and dvfs["host_shutdowns"] > 400
    assert dvfs["energy_kwh"] < 0.35 * 2419.2
    # THR-MMT moves VMs off hosts above 80 %, with SLAV and ESV as the paper defines them
    assert thr["migrations"]["count"] > 50 and thr["migrations"]["failed"] == 0
    assert thr["slatah_pct"] < 1.0 and thr["pdm_pct"] > 0
    assert thr["slav"] == pytest.approx(thr["slatah_pct"] * thr["pdm_pct"] / 1e4)
    assert thr["esv"] == pytest.approx(thr["energy_kwh"] * thr["slav"])
