"""The SR-IOV paper's experiments and Sova §5.4, run as sweeps from their scenario files."""

import pytest

from helpers import ROOT
from sova.control.profiles import check_profile
from sova.experiments.scenario_runs import run_sweep
from sova.model.sweep import load_runs


def sweep(path, only=None):
    """Each value's summaries by profile (`only`: just these of the sweep's values)."""
    sw, runs = load_runs(ROOT / "scenarios" / "papers" / path, check_profile)
    kept = [(v, r) for v, r in zip(sw.values, runs, strict=True) if only is None or v in only]
    out = {}
    for run in run_sweep([r for _, r in kept], [v for v, _ in kept]):
        out[run.value] = {r.profile: r.summary for r in run.results}
    return out


@pytest.fixture(scope="module")
def throughput():
    return sweep("sriov/throughput-vs-vms.toml")


def test_framework_holds_line_rate_while_the_default_declines(throughput):
    """§5.4, Fig. 7c: paper 9,429 vs 9,018 Mb/s at 63 VMs (the default's is the point dom0_vif_overhead was
    fitted to, so only the gap is held here)."""
    gbps = {n: {p: s["network"]["guest_tx_gbps"] for p, s in v.items()} for n, v in throughput.items()}
    assert all(v["framework"] >= 9.3 for v in gbps.values())
    assert gbps[63]["framework"] - gbps[63]["default"] >= 0.3


@pytest.fixture(scope="module")
def latency_vs_vms():
    """Fig. 7a: mean response time (s) by VM count and profile (10 KB pages, 100 requests/s)."""
    res = sweep("sriov/latency-vs-vms.toml")
    return {n: {p: s["services"]["response_mean"] for p, s in v.items()} for n, v in res.items()}


@pytest.fixture(scope="module")
def latency_cut(latency_vs_vms):
    """Fig. 7a: 1 - framework / default mean response time at each VM count."""
    return {n: 1 - v["framework"] / v["default"] for n, v in latency_vs_vms.items()}


def test_vnic_requests_wait_for_dom0_once_the_client_vms_fill_the_client_host(latency_vs_vms):
    """The httperf clients keep their vCPUs busy: from 40 of them on the 40-thread client host a request
    waits for that host's Dom0 forwarding thread (0.27 ms at 40, 0.50 ms at 48)."""
    default = {n: v["default"] for n, v in latency_vs_vms.items()}
    assert default[32] == pytest.approx(default[1], rel=0.05)
    assert default[40] > default[32] + 0.2e-3
    assert default[48] > default[40] + 0.2e-3


def test_framework_cuts_latency_below_the_threads_by_its_server_vfs(latency_cut):
    """Below 40 VMs only the fixed path latency differs: the servers' VFs skip two Dom0 crossings."""
    assert all(0.15 < latency_cut[n] < 0.3 for n in (1, 16, 32))


@pytest.mark.xfail(
    strict=True,
    reason="the framework's classifier keeps the CPU-bound httperf clients on their vNICs, so both profiles wait "
    "for the client host's Dom0 alike: the cut falls to 9.8 % at 40 VMs and 6.5 % at 48 (paper: > 26 %, 94 %)",
)
def test_framework_cuts_latency_by_a_quarter_from_32_vms_on(latency_cut):
    """§5.3, Fig. 7a: more than 26 % lower from 32 VMs on."""
    assert all(latency_cut[n] > 0.26 for n in (32, 40, 48))


@pytest.mark.xfail(strict=True, reason="as above: the cut at 48 VMs is 6.5 % (79 % if the clients held VFs)")
def test_framework_cuts_latency_by_94_percent_at_48_vms_as_the_paper_says(latency_cut):
    assert latency_cut[48] > 0.84


def test_framework_cuts_latency_at_every_rate():
    """§5.3, Fig. 7b: 21-58 % lower above 100 requests/s with 32 VMs."""
    res = sweep("sriov/latency-vs-rate.toml")
    for rate in (200, 400, 600, 800, 1000):
        d, f = (res[rate][p]["services"]["response_mean"] for p in ("default", "framework"))
        assert 0.21 <= 1 - f / d <= 0.6


def test_framework_speeds_up_file_transfers_when_many_vms_copy():
    """§5.5, Fig. 7d: 48 VMs, 70 % busy: paper 296 s default vs 211 s (-29 %)."""
    res = sweep("sriov/transfer-vs-vms.toml")
    t = {n: {p: s["transfers"]["completion_mean"] for p, s in v.items()} for n, v in res.items()}
    assert t[34]["framework"] <= 0.8 * t[34]["default"]  # 34 busy + 14 idle = 48 VMs
    assert t[1]["framework"] == pytest.approx(t[1]["default"], rel=0.05)


@pytest.fixture(scope="module")
def sova54():
    return sweep("sova/sec54-overall.toml", only=(1000, 1200, 1400))  # the rates the tests read


def test_sova54_dsriov_beats_default_below_saturation(sova54):
    for rate in (1000, 1200):
        r = {p: s["services"]["response_mean"] for p, s in sova54[rate].items()}
        assert r["dsriov"] < r["default"]


def test_sova54_vlm_beats_dsriov_once_hm1_saturates(sova54):
    r = {p: s["services"]["response_mean"] for p, s in sova54[1400].items()}
    assert r["vlm"] < 0.1 * r["dsriov"]


def test_sova54_sova_matches_the_better_of_the_two_below_saturation(sova54):
    for rate in (1000, 1200):
        r = {p: s["services"]["response_mean"] for p, s in sova54[rate].items()}
        assert r["sova"] <= 1.05 * min(r["dsriov"], r["vlm"])


def test_sova54_sova_no_longer_trades_vms_at_saturation(sova54):
    """At 1,400 req/s Algorithm 2 as the paper gives it makes 29 migrations in 30 min where VLM makes 4, the
    saturated hosts trading VMs; the steady test (sova's default) keeps Sova to VLM's count."""
    s = sova54[1400]
    assert s["sova"]["migrations"]["completed"] <= s["vlm"]["migrations"]["completed"]
    assert s["sova"]["services"]["response_mean"] <= 1.5 * s["vlm"]["services"]["response_mean"]
