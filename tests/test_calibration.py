"""The simulator's defaults reproduce the shapes the papers measured on real hardware (see calibration.py)."""

import itertools

import pytest

from sova.control import calibration as cal


def test_paravirtual_throughput_falls_with_vms_while_vfs_hold_line_rate():
    """SR-IOV paper §5.4: about 9.0 (vNIC) vs 9.4 Gb/s (VF) at 63 VMs; tolerance 0.15 Gb/s."""
    pv = {n: cal.netperf_throughput(n, "vnic") for n in (1, 16, 32, 48, 63)}
    vf = {n: cal.netperf_throughput(n, "vf") for n in (1, 63)}
    assert pv[63] / 1e9 == pytest.approx(9.018, abs=0.15)
    assert vf[63] / 1e9 == pytest.approx(9.429, abs=0.15)
    assert pv[1] / 1e9 == pytest.approx(9.4, abs=0.15)
    counts = sorted(pv)
    assert all(pv[a] >= pv[b] - 1e3 for a, b in itertools.pairwise(counts))  # never rises
    assert pv[1] - pv[63] > 0.25e9


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


def test_oversubscribed_cpu_slows_jobs_as_vms_grow():
    """CloudScope Fig. 2a: about 1.7x at 45 VMs of 4 vCPUs on 32 hardware threads; tolerance 0.15."""
    base = cal.cpu_job_time(1)
    slow = {n: cal.cpu_job_time(n) / base for n in (5, 25, 45)}
    assert slow[45] == pytest.approx(1.7, abs=0.15)
    assert slow[5] == pytest.approx(1.0, abs=0.05)
    assert 1.0 < slow[25] < slow[45]
