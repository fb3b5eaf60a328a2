"""The consolidation study on Bitbrains Rnd (scenarios/traces/bitbrains-consolidation.toml): VMs sized by
their own traces on IBM x3550 M3 hosts, CloudSim's profiles beside Sova's, run on the project's 260-VM
excerpt of the same traces (the shared 500-VM archive takes a minute to read)."""

from __future__ import annotations

import csv
import io
import tarfile

import pytest

from helpers import ROOT
from sova.control.profiles import check_profile
from sova.experiments.scenario_runs import run_profile
from sova.model.sweep import load_runs
from sova.sim.engine import Simulator

SCENARIO = ROOT / "scenarios" / "traces" / "bitbrains-consolidation.toml"
EXCERPT = ROOT / "scenarios" / "traces" / "bitbrains-rnd-260-5h.tar.gz"


def study(duration: str = "5h"):  # the excerpt's whole length
    _, (scenario,) = load_runs(SCENARIO, check_profile, {"rnd": str(EXCERPT), "duration": duration})
    return scenario


def provisioned(member: str) -> tuple[int, float]:
    """The most cores and memory (MiB) a VM of the excerpt was given, read with the csv module."""
    with tarfile.open(EXCERPT) as tar:
        text = io.TextIOWrapper(tar.extractfile(member), encoding="utf-8").read()
    rows = [[float(x) for x in row] for row in csv.reader(text.splitlines()[1:], delimiter=";")]
    return max(1, int(max(r[1] for r in rows))), max(r[5] for r in rows) / 1024


def test_the_study_has_a_vm_per_trace_and_cloudsims_profiles_beside_sovas_own():
    scenario = study()
    assert len(scenario.vms) == 260 and all(v.from_trace for v in scenario.vms)
    assert {h.power_model for h in scenario.hosts} == {"ibm-x3550-x5670"} and len(scenario.hosts) == 60
    assert {"npa", "dvfs", "thr-mmt-0.8", "lrr-rs-1.2", "vlm", "sova", "greedy-fill", "cloudscope"} <= set(
        scenario.profiles
    )
    assert len(scenario.profiles) == 26


def test_five_hours_size_each_vm_by_its_trace_and_consolidation_saves_power_over_dvfs():
    scenario = study()
    npa = run_profile(scenario, "npa")
    dvfs = run_profile(scenario, "dvfs")
    thr = run_profile(scenario, "thr-mmt-0.8")
    for result in (npa, dvfs, thr):
        assert result.summary["lifecycle"]["created"] == 260
    # the excerpt's members sort as strings: 1.csv, 10.csv, 100.csv ... vm1, vm2, vm3
    with tarfile.open(EXCERPT) as tar:
        members = sorted(m.name for m in tar.getmembers() if m.isfile())
    sim = Simulator(scenario)
    for k in (0, 1, 2):
        cores, memory = provisioned(members[k])
        assert (sim.compute.vm_vcpus[k], sim.vms.memory[k]) == (cores, pytest.approx(memory))
    # NPA: 60 hosts at 247 W for 5 h; DVFS sleeps the hosts first fit left empty
    assert npa.summary["energy_kwh"] == pytest.approx(60 * 247 * 5 / 1000)
    assert dvfs.summary["energy_kwh"] < 0.6 * npa.summary["energy_kwh"]
    # THR-MMT packs by CPU, where first fit stopped at 4 vCPUs a core: more hosts asleep, less energy
    # (in its first two hours the migrations cost more than the hosts it empties save)
    assert thr.summary["migrations"]["count"] > 0
    assert thr.summary["host_shutdowns"] > dvfs.summary["host_shutdowns"]
    assert thr.summary["energy_kwh"] < dvfs.summary["energy_kwh"]
