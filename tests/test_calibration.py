"""The simulator's defaults against the papers' and the lab's measurements (see calibration.py), on points no
constant was fitted to: sched_overhead was fitted to CloudScope's 1.7x at 45 prime-3000 VMs and
dom0_vif_overhead to the SR-IOV paper's 9,018 Mb/s at 63 VMs (their papers' only numbers), wake_wait and
wake_wait_over to the lab's x = 1 and x = 2; the tests here hold the other points and the shapes."""

import csv
import itertools

import pytest

from helpers import ROOT
from sova.experiments import calibration as cal
from sova.model.scenario_fields import WAKE_WAIT, WAKE_WAIT_OVER

FITTED_AT = (1.0, 2.0)  # runnable vCPUs per thread of the lab points wake_wait and wake_wait_over come from

VNIC_COUNTS = (1, 16, 32, 40, 48, 56, 63)


@pytest.fixture(scope="module")
def netperf():
    """SR-IOV paper §5.4 / Fig. 7c: aggregate goodput (bit/s) of N VMs through one 10 GbE port."""
    return {nic: {n: cal.netperf_throughput(n, nic) for n in VNIC_COUNTS} for nic in ("vnic", "vf")}


def test_vf_goodput_at_63_vms_is_the_papers_within_one_percent_with_no_constant_fitted_to_it(netperf):
    """9,428.92 Mb/s (VF): protocol_efficiency's ceiling, 10 G x 1448/1538 (-0.56 % here). The vNIC's
    9,018.04 Mb/s is the point dom0_vif_overhead was fitted to, so no test holds it (docs/fidelity.md lists it
    as fitted)."""
    assert netperf["vf"][63] == pytest.approx(9428.92e6, rel=0.01)


def test_paravirtual_goodput_never_rises_with_vms_while_vfs_hold_line_rate_at_every_count(netperf):
    vnic, vf = netperf["vnic"], netperf["vf"]
    assert all(vnic[a] >= vnic[b] - 1e3 for a, b in itertools.pairwise(VNIC_COUNTS))
    assert vnic[1] - vnic[63] > 0.3e9 and vnic[40] > vnic[48] > vnic[56] > vnic[63]  # falls past Dom0's knee
    assert all(v == pytest.approx(vf[1], rel=1e-3) for v in vf.values())


@pytest.mark.xfail(strict=True, reason="Dom0 saturates only near 32 VMs: the model is flat before (docs/simulator.md)")
def test_paravirtual_goodput_falls_gradually_from_few_vms_as_the_paper_says(netperf):
    assert netperf["vnic"][16] < netperf["vnic"][1] - 0.05e9


@pytest.mark.parametrize("page", ["128KB", "256KB"])
def test_colocated_vnic_pair_is_slower_than_across_hosts(page):
    """Sova paper Fig. 2, footnote 2: the Dom0 bridge is a bottleneck for local-to-local traffic."""
    assert cal.web_response_time(page, True, "vnic") > 1.2 * cal.web_response_time(page, False, "vnic")


@pytest.mark.parametrize("page", ["4KB", "64KB"])
def test_small_pages_see_little_difference_between_colocated_and_remote(page):
    local, remote = cal.web_response_time(page, True, "vnic"), cal.web_response_time(page, False, "vnic")
    assert local == pytest.approx(remote, rel=0.15)


@pytest.mark.parametrize("colocated", [True, False])
def test_vfs_beat_vnics_for_pages_above_128KB(colocated):
    """Sova paper Fig. 2: at 2,500 requests/s, VFs answer faster once pages exceed 128 KB (by >= 40 % here)."""
    for page in ("128KB", "256KB"):
        assert cal.web_response_time(page, colocated, "vf") < 0.6 * cal.web_response_time(page, colocated, "vnic")


@pytest.fixture(scope="module")
def slowdown():
    """CloudScope Fig. 2a: job time relative to one VM, per prime, VMs of 4 x 1 GHz vCPUs on 32 hyper-threads."""
    out = {}
    for prime in (2000, 3000, 5000):
        base = cal.cpu_job_time(1, prime)
        out[prime] = {n: cal.cpu_job_time(n, prime) / base for n in (5, 15, 25, 35, 45)}
    return out


def test_prime_2000_is_stable_until_35_vms_and_then_slightly_slower(slowdown):
    assert slowdown[2000][35] < 1.01 and slowdown[2000][35] < slowdown[2000][45] < 1.1


def test_prime_3000_is_steeper_from_25_vms(slowdown):
    curve = slowdown[3000]
    assert curve[25] < curve[35] < curve[45]
    assert curve[45] - curve[25] > 1.5 * (curve[25] - curve[5])


def test_prime_5000_is_slowed_earlier_and_more_than_prime_3000(slowdown):
    assert all(slowdown[5000][n] > slowdown[3000][n] for n in (15, 25, 35, 45))


@pytest.mark.xfail(strict=True, reason="below one runnable vCPU per thread and 16 busy threads nothing slows a job")
def test_prime_3000_slows_already_with_5_vms_as_the_paper_says(slowdown):
    assert slowdown[3000][5] > 1.02


@pytest.fixture(scope="module")
def lab_wait():
    """{runnable vCPUs per thread: the lab's mean round-trip rise (s)} (benchmarks/data/sched-wait-lab.csv)."""
    with open(ROOT / "benchmarks" / "data" / "sched-wait-lab.csv") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return {float(r["runnable_per_thread"]): (int(r["busy_guests"]), float(r["rise_ms"]) * 1e-3) for r in rows}


def test_wake_wait_constants_are_the_lab_fit_at_one_and_two_runnable_vcpus_per_thread(lab_wait):
    fitted = {"wake_wait": WAKE_WAIT, "wake_wait + wake_wait_over": WAKE_WAIT + WAKE_WAIT_OVER}
    assert fitted == pytest.approx({"wake_wait": lab_wait[1.0][1], "wake_wait + wake_wait_over": lab_wait[2.0][1]})


def test_wake_wait_predicts_the_lab_points_it_was_not_fitted_to(lab_wait):
    """Held out: x = 0.5 (+0.03 ms), 1.5 (-36 %: the lab's runs there scatter 1.3-2.2 ms) and 2.5 (-4 %)."""
    idle = cal.wake_wait_response(0)
    held_out = {x: point for x, point in lab_wait.items() if x not in FITTED_AT}
    assert sorted(held_out) == [0.5, 1.5, 2.5]
    for x, (busy, measured) in held_out.items():
        rise = cal.wake_wait_response(busy) - idle
        assert rise == pytest.approx(measured, abs=0.05e-3) if x < 1 else rise == pytest.approx(measured, rel=0.4)
