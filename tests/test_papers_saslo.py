"""SASLO's experiments, run from their scenario files under scenarios/papers/saslo/ (the long ones cut
shorter): what comes out, and (as strict expected failures) the paper's directions that do not yet."""

from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from functools import partial

import pytest

from helpers import ROOT
from sova.control.profiles import check_profile
from sova.experiments.scenario_runs import run_scenario
from sova.model import units
from sova.model.sweep import load_runs

PAPER = ROOT / "scenarios" / "papers" / "saslo"


def slo_by_profile(scenario, minutes: float | None = None, profiles: list[str] | None = None) -> dict:
    """Each profile's slo summary; `minutes`: the scenario cut to that long (the directions tested hold
    over it; docs/storage-slo.md has the full runs' numbers)."""
    if minutes is not None:
        scenario = replace(scenario, duration=60.0 * minutes)
    return {r.profile: r.summary["slo"] for r in run_scenario(scenario, profiles=profiles)}


def sweep_slos(scenarios: list, minutes: float) -> list[dict]:
    """slo_by_profile of each scenario, two at a time in processes of their own (seeded: the same results)."""
    with ProcessPoolExecutor(2) as pool:
        return list(pool.map(partial(slo_by_profile, minutes=minutes), scenarios))


@pytest.fixture(scope="module")
def fig6_sweep():
    """The steady array and the most uneven one (the sweep's ends)."""
    sweep, runs = load_runs(PAPER / "fig6-disk-array.toml", check_profile)
    ends = [(v, s) for v, s in zip(sweep.values, runs, strict=True) if v in (0.0, 0.3)]
    return dict(zip([v for v, _ in ends], sweep_slos([s for _, s in ends], minutes=5), strict=True))


def test_fig6_a_steady_array_lets_every_controller_hold_every_target(fig6_sweep):
    for profile, slo in fig6_sweep[0.0].items():
        assert all(s["avpe"] < 0.01 and s["sc_rate"] == 100 for s in slo.values()), profile
    for profile in ("static", "see"):
        assert fig6_sweep[0.3][profile]["mail"]["sc_rate"] < 97  # the array's dips hold the mail server back


def test_fig6_drr_costs_the_large_requests_compliance_and_steadiness_as_the_paper_says(fig6_sweep):
    drr, see = fig6_sweep[0.3]["drr"]["file"], fig6_sweep[0.3]["see"]["file"]
    assert drr["sc_rate"] < see["sc_rate"] - 3 and drr["pf_ratio"] > see["pf_ratio"] + 3


def test_fig6_a_leaky_bucket_makes_up_its_mean_with_bursts(fig6_sweep):
    bucket, see = fig6_sweep[0.3]["leaky-bucket"]["mail"], fig6_sweep[0.3]["see"]["mail"]
    assert bucket["avpe"] < 0.5 < see["avpe"] and bucket["pf_ratio"] > see["pf_ratio"] + 2


def test_fig6_mclock_spreads_the_arrays_dips_over_every_vm(fig6_sweep):
    avpe = [s["avpe"] for s in fig6_sweep[0.3]["mclock"].values()]
    assert max(avpe) - min(avpe) < 0.2 and max(avpe) < fig6_sweep[0.3]["see"]["mail"]["avpe"]


def test_fig6_integral_control_fluctuates_more_than_see_on_a_varying_array_as_the_paper_says(fig6_sweep):
    for vm in ("file", "mail"):
        assert fig6_sweep[0.3]["integral"][vm]["pf_ratio"] > fig6_sweep[0.3]["see"][vm]["pf_ratio"]


@pytest.mark.xfail(
    strict=True,
    reason="SASLO's limiter and QEMU's (measured) both pace a backlogged VM at exactly its limit, so while the "
    "array has room both are exact and when it dips the array, not the limit, holds the VMs back: mail's "
    "SC rate 93.4 % under SEE and 93.2 % under the fixed limit at 0.3 (docs/storage-slo.md)",
)
def test_fig6_see_complies_far_more_than_a_fixed_throttle_as_the_paper_says(fig6_sweep):
    assert fig6_sweep[0.3]["see"]["mail"]["sc_rate"] > fig6_sweep[0.3]["static"]["mail"]["sc_rate"] + 3


def test_settling_see_reaches_each_new_target_within_the_designed_5_epochs():
    _, runs = load_runs(PAPER / "settling-disk-array.toml", check_profile)
    slo = slo_by_profile(runs[0], minutes=5)
    for vm in ("web", "file", "mail"):
        assert 1 < slo["see"][vm]["settling_epochs"] < 5  # the paper: 3.5-4.5 on real devices
        assert slo["see"][vm]["target_changes"] > 75  # every 3 s for 5 min


def test_reservations_beyond_the_array_mclock_cuts_alike_see_leaves_it_to_the_array_drr_shares_bytes():
    _, runs = load_runs(PAPER / "reservations-exceed-array.toml", check_profile)
    slo = slo_by_profile(runs[0])

    def got(profile):
        return {vm: s["throughput_mean"] / s["target_mean"] for vm, s in slo[profile].items()}

    assert list(got("mclock").values()) == pytest.approx([got("mclock")["web"]] * 3, rel=0.01)
    see = got("see")  # the array's time, shared max-min: about the same IOPS each, whatever the target
    assert see["web"] > 0.9 and see["mail"] < 0.5
    drr = got("drr")  # fair in bytes: the file server's 128 KiB requests get fewest
    assert drr["file"] < 0.2 < drr["web"]


def test_fig4_see_holds_feasible_targets_and_complies_less_as_they_near_the_arrays_capacity():
    _, runs = load_runs(PAPER / "fig4-disk-array.toml", check_profile)
    # the targets step every 2 minutes instead of 10
    slos = tuple((vm, replace(slo, ramp=replace(slo.ramp, every=120.0))) for vm, slo in runs[0].slos)
    scenario = replace(runs[0], slos=slos)
    levels = {vm: {lv["target"]: lv for lv in s["levels"]} for vm, s in slo_by_profile(scenario, 18)["see"].items()}
    for by_target in levels.values():
        assert all(by_target[t]["avpe"] < 0.5 and by_target[t]["sc_rate"] > 98 for t in (200, 300, 400, 500))
        sc = [by_target[t]["sc_rate"] for t in sorted(by_target)]
        pf = [by_target[t]["pf_ratio"] for t in sorted(by_target)]
        assert sc[-1] < sc[4] < sc[0] and pf[-1] > pf[4] > pf[0]  # the paper's trend, to infeasible
        assert by_target[1000]["throughput_mean"] < 900  # beyond the ~930 IOPS each the array gives three


@pytest.fixture(scope="module")
def fig5_sweep():
    sweep, runs = load_runs(PAPER / "fig5-disk-array.toml", check_profile)
    return {v[0]: slo["see"] for v, slo in zip(sweep.values, sweep_slos(runs, minutes=5), strict=True)}


def test_fig5_the_actual_io_size_follows_the_limit_and_the_error_stays_small(fig5_sweep):
    request = {"web": 16 * 1024, "file": 128 * 1024, "mail": 16 * 1024}  # Table 3
    for limit, slo in fig5_sweep.items():
        for vm, s in slo.items():
            assert s["io_size_mean"] == pytest.approx(min(request[vm], units.size_bytes(limit)), rel=1e-6)
            assert s["avpe"] < 3  # over 5 minutes (the full 20: under 2 %); the paper: < 0.2 %


def test_fig5_smaller_io_size_limits_give_steadier_throughput_as_the_paper_says(fig5_sweep):
    # a split IO's pieces follow its first on the disk: the same IOPS of smaller pieces cost the array less
    for vm in ("file", "mail"):
        assert fig5_sweep["4KiB"][vm]["pf_ratio"] < fig5_sweep["1MiB"][vm]["pf_ratio"] - 1
        assert fig5_sweep["4KiB"][vm]["sc_rate"] > fig5_sweep["1MiB"][vm]["sc_rate"]


@pytest.fixture(scope="module")
def aot_runs():
    """Each configuration's scenario and SEE's slo summary over its first 20 minutes."""
    configs = {n: load_runs(PAPER / f"aot-config{n}-disk-array.toml", check_profile)[1][0] for n in (1, 2)}
    slo = {n: s["see"] for n, s in zip(configs, sweep_slos(list(configs.values()), minutes=20), strict=True)}
    return configs, slo


def test_aot_gives_the_looser_configuration_more_throughput_as_table_6_says(aot_runs):
    configs, slo = aot_runs
    for n, scenario in configs.items():
        for vm, s in slo[n].items():
            wanted = dict(scenario.slos)[vm]
            assert wanted.throughput[0] <= s["throughput_mean"] <= wanted.throughput[1]
    for vm in ("web", "file", "mail"):
        assert slo[2][vm]["throughput_mean"] > slo[1][vm]["throughput_mean"]
        assert slo[2][vm]["pf_ratio"] > slo[1][vm]["pf_ratio"]


@pytest.mark.xfail(
    strict=True,
    reason="a split IO's pieces follow its first on the disk, so the array has room for the top of every "
    "range: the file server complies every second under both configurations (SC 100 % over 2 h), and the mail "
    "server's climb to 1,400 IOPS fluctuates above its PF range over the first 20 minutes (15.1 % > 15 %)",
)
def test_aot_meets_each_configurations_qos_and_the_looser_one_complies_less_as_table_6_says(aot_runs):
    configs, slo = aot_runs
    for n, scenario in configs.items():
        for vm, s in slo[n].items():
            wanted = dict(scenario.slos)[vm]
            assert s["sc_rate"] >= wanted.sc_rate[0] and s["pf_ratio"] <= wanted.pf_ratio[1]
    for vm in ("web", "file", "mail"):
        assert slo[2][vm]["sc_rate"] < slo[1][vm]["sc_rate"]


def test_fig7_every_vm_replaying_a_real_trace_holds_its_slo_from_1_to_15_vms():
    sweep, runs = load_runs(PAPER / "fig7-trace-ssd.toml", check_profile)
    for count, scenario in zip(sweep.values, runs, strict=True):
        slo = slo_by_profile(scenario, minutes=1)["see"]
        assert len(slo) == count
        assert all(s["sc_rate"] > 90 and s["avpe"] < 0.1 for s in slo.values())  # the paper: > 90 %, < 0.087 %


def test_fig8_see_with_facade_holds_throughput_and_latency_slos_together_as_the_paper_says():
    _, runs = load_runs(PAPER / "fig8-latency-disk-array.toml", check_profile)
    results = slo_by_profile(runs[0], minutes=10, profiles=["see", "static"])
    for vm, s in results["see"].items():
        assert s["avpe"] < 1 and s["latency_sc_rate"] > 98  # the paper: 99.42-99.92 %
        assert s["latency_mean"] == pytest.approx(s["latency_target"], rel=0.01)
        assert results["static"][vm]["latency_sc_rate"] < 1  # a VM's threads, uncapped, wait behind its limit
