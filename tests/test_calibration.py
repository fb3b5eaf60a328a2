"""The simulator's defaults reproduce the shapes the papers measured on real hardware (see calibration.py)."""

import itertools

import pytest

from sova.experiments import calibration as cal

VNIC_COUNTS = (1, 16, 32, 40, 48, 56, 63)


@pytest.fixture(scope="module")
def netperf():
    """SR-IOV paper §5.4 / Fig. 7c: aggregate goodput (bit/s) of N VMs through one 10 GbE port."""
    return {nic: {n: cal.netperf_throughput(n, nic) for n in VNIC_COUNTS} for nic in ("vnic", "vf")}


def test_netperf_goodput_at_63_vms_is_within_one_percent_of_the_paper(netperf):
    """The paper's only numbers: 9,018.04 Mb/s (vNIC) and 9,428.92 Mb/s (VF) at 63 VMs (measured -0.32 %, -0.15 %)."""
    assert netperf["vnic"][63] == pytest.approx(9018.04e6, rel=0.01)
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


def test_prime_3000_slows_jobs_1_7_times_at_45_vms(slowdown):
    """The paper's only number: "as high as 1.7x for 45 VMs" (two figures: 1.65-1.75)."""
    assert slowdown[3000][45] == pytest.approx(1.7, abs=0.05)


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
