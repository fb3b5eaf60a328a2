"""The SASLO paper's Figs. 4-8, its settling time and Table 6 as experiments and claims
(scenarios/papers/saslo/, the full durations)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sova.report.fidelity.claims import Claim, Experiment, Metrics
from sova.report.fidelity.paper_runs import by_profile, sweep

PAPER = "SASLO"
VMS = ("web", "file", "mail")
TABLE6 = {1: (488.4, 687.2, 886.8), 2: (502.1, 753.0, 1003.2)}  # SEE's IOPS per VM, configurations 1 and 2
SETTLING = (4.46, 3.83, 4.45)  # epochs to the first compliance on the disk array
FIG8 = (400.16, 500.02, 600.25)  # SEE with latency targets: IOPS per VM


def _slo(summary: dict) -> dict:
    return summary["slo"]


def measure_fig4_fig5(root: Path) -> Metrics:
    (see,) = by_profile(root, "saslo/fig4-disk-array.toml", ["see"]).values()
    levels = {vm: {lv["target"]: lv for lv in s["levels"]} for vm, s in _slo(see).items()}
    metrics = {
        "fig4.sc_feasible_min": min(levels[vm][t]["sc_rate"] for vm in levels for t in (200, 300, 400, 500)),
        "fig4.sc_at_1000_max": max(levels[vm][1000]["sc_rate"] for vm in levels),
    }
    runs = sweep(root, "saslo/fig5-disk-array.toml", ["see"])
    by_limit = {limit[0]: _slo(profiles["see"]) for limit, profiles in runs.items()}
    for limit in ("4KiB", "1MiB"):
        for vm in VMS:
            metrics[f"fig5.{limit}.{vm}.pf"] = by_limit[limit][vm]["pf_ratio"]
            metrics[f"fig5.{limit}.{vm}.sc"] = by_limit[limit][vm]["sc_rate"]
    metrics["fig5.avpe_max"] = max(s["avpe"] for slo in by_limit.values() for s in slo.values())
    return metrics


def measure_fig6(root: Path) -> Metrics:
    runs = sweep(root, "saslo/fig6-disk-array.toml")[0.3]
    metrics = {}
    for profile, summary in runs.items():
        for vm, s in _slo(summary).items():
            metrics |= {f"{profile}.{vm}.{key}": s[key] for key in ("avpe", "sc_rate", "pf_ratio")}
        metrics[f"{profile}.avpe_mean"] = float(np.mean([metrics[f"{profile}.{vm}.avpe"] for vm in VMS]))
        metrics[f"{profile}.avpe_max"] = float(max(metrics[f"{profile}.{vm}.avpe"] for vm in VMS))
    metrics["see_over_static_avpe"] = metrics["see.avpe_mean"] / metrics["static.avpe_mean"]
    return metrics


def measure_settling_aot_latency(root: Path) -> Metrics:
    see = _slo(by_profile(root, "saslo/settling-disk-array.toml", ["see"])["see"])
    metrics = {"settling_mean": float(np.mean([see[vm]["settling_epochs"] for vm in VMS]))}
    for config, paper in TABLE6.items():
        slo = _slo(by_profile(root, f"saslo/aot-config{config}-disk-array.toml", ["see"])["see"])
        got = [slo[vm]["throughput_mean"] for vm in VMS]
        metrics[f"aot{config}.error"] = float(100 * np.mean(np.abs(np.array(got) / paper - 1)))
        metrics[f"aot{config}.total"] = float(sum(got))
    slo = _slo(by_profile(root, "saslo/fig8-latency-disk-array.toml", ["see"])["see"])
    metrics["fig8.error"] = float(
        100 * np.mean([abs(slo[vm]["throughput_mean"] / x - 1) for vm, x in zip(VMS, FIG8, strict=True)])
    )
    metrics["fig8.latency_sc_min"] = min(slo[vm]["latency_sc_rate"] for vm in VMS)
    return metrics


def measure_ssd(root: Path) -> Metrics:
    """Fig. 6 on the SSD (every controller) and Fig. 7's trace replay (SEE, 1-15 VMs)."""
    runs = by_profile(root, "saslo/fig6-ssd.toml")
    metrics = {f"fig6.{p}.avpe_mean": float(np.mean([s["avpe"] for s in _slo(r).values()])) for p, r in runs.items()}
    metrics["fig6.sc_min"] = min(s["sc_rate"] for r in runs.values() for s in _slo(r).values())
    trace = sweep(root, "saslo/fig7-trace-ssd.toml", ["see"])
    sc = [float(np.mean([s["sc_rate"] for s in _slo(p["see"]).values()])) for p in trace.values()]
    metrics["fig7.sc_mean_min"], metrics["fig7.sc_mean_max"] = min(sc), max(sc)
    return metrics


EXPERIMENTS = [
    Experiment("saslo-fig4-fig5", ("saslo/fig4-disk-array.toml", "saslo/fig5-disk-array.toml"), measure_fig4_fig5),
    Experiment("saslo-fig6", ("saslo/fig6-disk-array.toml",), measure_fig6),
    Experiment(
        "saslo-settling-aot-fig8",
        ("saslo/settling-disk-array.toml", "saslo/aot-config*-disk-array.toml", "saslo/fig8-latency-disk-array.toml"),
        measure_settling_aot_latency,
    ),
    Experiment("saslo-ssd", ("saslo/fig6-ssd.toml", "saslo/fig7-trace-ssd.toml"), measure_ssd),
]

FIXED_EXACT = (
    "a limiter-paced VM gets its limit exactly, as QEMU's throttle does (measured: every 1 s count exactly L up to "
    "800 IOPS, benchmarks/data/qemu_throttle.csv), and when the array dips no limit gives the missing IOs back, so "
    "SEE has little to correct (mail server AVPE 1.81 % against the fixed limiter's 1.94 %; with QEMU's bucket "
    "0.91 % against 0.98 %; docs/storage-slo.md)"
)
UNSPLIT_DIPS = (
    "the unsplit runs keep their 16-128 KiB requests, whose seeks the array's dips hold back (mail server 1.75 % at "
    "128 KiB and 1 MiB); with a limit of 64 KiB or less every VM stays at or under 0.41 % (docs/storage-slo.md)"
)
ROOMY_CARD = (
    "the card (the ioDrive2 data sheet: 68 us reads, 15 us writes) has room for every target: Fig. 6's need about "
    "3 % of it and Fig. 7's 15 VMs a fifth, where the paper's card was 51 % busy; what held the paper's VMs back "
    "there (its host's IO path and page cache) is not modelled (docs/storage-slo.md)"
)
CHEAP_PIECES = (
    "a split request's pieces follow the first on the disk (one seek, then sequential access), so small IO size "
    "limits cost the array little and the AOT climbs to the tops of the tenants' ranges (docs/storage-slo.md)"
)
CLAIMS = [
    Claim(
        PAPER,
        "Fig. 4",
        "SEE's lowest SC rate at feasible targets (200-500 IOPS)",
        "about 100 %",
        "saslo-fig4-fig5",
        "fig4.sc_feasible_min",
        "%",
        target=100,
        tolerance=2,
    ),
    Claim(
        PAPER,
        "Fig. 4",
        "SEE's highest SC rate at 1,000 IOPS each",
        "falls as targets near capacity",
        "saslo-fig4-fig5",
        "fig4.sc_at_1000_max",
        "%",
        direction=lambda m: m["fig4.sc_at_1000_max"] < m["fig4.sc_feasible_min"],
    ),
    Claim(
        PAPER,
        "Fig. 5",
        "largest AVPE over IO size limits and VMs",
        "under 0.2 %",
        "saslo-fig4-fig5",
        "fig5.avpe_max",
        "%",
        bound=lambda v: v < 0.2,
        direction=lambda m: m["fig5.avpe_max"] < 3,
        cause=UNSPLIT_DIPS,
    ),
    Claim(
        PAPER,
        "Fig. 5",
        "file server's PF ratio at a 4 KiB limit (1 MiB: the next row's)",
        "lower at smaller limits",
        "saslo-fig4-fig5",
        "fig5.4KiB.file.pf",
        "%",
        direction=lambda m: m["fig5.4KiB.file.pf"] < m["fig5.1MiB.file.pf"] - 1,
    ),
    Claim(
        PAPER,
        "Fig. 5",
        "file server's PF ratio at 1 MiB",
        "higher",
        "saslo-fig4-fig5",
        "fig5.1MiB.file.pf",
        "%",
        direction=lambda m: m["fig5.1MiB.file.pf"] > m["fig5.4KiB.file.pf"] + 1,
    ),
    Claim(
        PAPER,
        "Fig. 6",
        "SEE's mean AVPE over the fixed throttle's, variability 0.3",
        "far lower (at most 0.5x)",
        "saslo-fig6",
        "see_over_static_avpe",
        "x",
        bound=lambda v: v <= 0.5,
        direction=lambda m: m["see_over_static_avpe"] < 1,
        cause=FIXED_EXACT,
    ),
    Claim(
        PAPER,
        "Fig. 6",
        "mail server's SC rate under SEE (static: 3 points lower or more)",
        "far higher than fixed",
        "saslo-fig6",
        "see.mail.sc_rate",
        "%",
        direction=lambda m: m["see.mail.sc_rate"] > m["static.mail.sc_rate"] + 3,
        cause=FIXED_EXACT,
    ),
    Claim(
        PAPER,
        "Fig. 6",
        "DRR's largest AVPE",
        "under 3 %",
        "saslo-fig6",
        "drr.avpe_max",
        "%",
        bound=lambda v: v < 3,
        cause="DRR is fair in bytes, so the file server's 128 KiB requests, eight times the others' bytes, take the "
        "whole loss of the array's dips (3.36 %; the web and mail servers 0.04-0.05 %; docs/storage-slo.md)",
    ),
    Claim(
        PAPER,
        "Fig. 6",
        "the leaky bucket's mean AVPE over SEE's",
        "not adequately small (SEE: almost zero)",
        "saslo-fig6",
        "leaky-bucket.avpe_mean",
        "%",
        direction=lambda m: m["leaky-bucket.avpe_mean"] > 2 * m["see.avpe_mean"],
        cause="the bucket makes up its mean with bursts, so its mean error is small where the paper's was not "
        "(docs/storage-slo.md)",
    ),
    Claim(
        PAPER,
        "Fig. 6",
        "Integral's mean AVPE",
        "almost zero",
        "saslo-fig6",
        "integral.avpe_mean",
        "%",
        bound=lambda v: v < 0.5,
    ),
    Claim(
        PAPER,
        "Fig. 6",
        "file server's SC rate under DRR",
        "lower than SEE's",
        "saslo-fig6",
        "drr.file.sc_rate",
        "%",
        direction=lambda m: m["drr.file.sc_rate"] < m["see.file.sc_rate"] - 3,
    ),
    Claim(
        PAPER,
        "Fig. 6",
        "file server's PF ratio under Integral",
        "fluctuates more than SEE",
        "saslo-fig6",
        "integral.file.pf_ratio",
        "%",
        direction=lambda m: m["integral.file.pf_ratio"] > m["see.file.pf_ratio"],
    ),
    Claim(
        PAPER,
        "§4.3",
        "SEE's epochs to the first compliance (mean of 3 VMs)",
        "4.25 (3.83-4.46)",
        "saslo-settling-aot-fig8",
        "settling_mean",
        "epochs",
        target=float(np.mean(SETTLING)),
        tolerance=0.25,
        direction=lambda m: 1 < m["settling_mean"] <= 5,
        cause="the simulated VM follows its limit at once (a = b = 1), where the paper's epochs stretched to "
        "27.7-31.4 ms behind IO latency",
    ),
    Claim(
        PAPER,
        "Table 6",
        "SEE's IOPS per VM, configuration 1: mean error",
        "488 / 687 / 887",
        "saslo-settling-aot-fig8",
        "aot1.error",
        "%",
        bound=lambda v: v <= 10,
        cause=CHEAP_PIECES,
    ),
    Claim(
        PAPER,
        "Table 6",
        "SEE's IOPS per VM, configuration 2: mean error",
        "502 / 753 / 1,003",
        "saslo-settling-aot-fig8",
        "aot2.error",
        "%",
        bound=lambda v: v <= 10,
        cause=CHEAP_PIECES,
    ),
    Claim(
        PAPER,
        "Table 6",
        "total IOPS, configuration 2 over 1",
        "looser ranges get more",
        "saslo-settling-aot-fig8",
        "aot2.total",
        "IOPS",
        direction=lambda m: m["aot2.total"] > m["aot1.total"],
    ),
    Claim(
        PAPER,
        "Fig. 8",
        "SEE's IOPS with latency targets: mean error",
        "400 / 500 / 600",
        "saslo-settling-aot-fig8",
        "fig8.error",
        "%",
        bound=lambda v: v <= 2,
    ),
    Claim(
        PAPER,
        "Fig. 8",
        "SEE's lowest latency SC rate",
        "99.42 % (of 99.42-99.92)",
        "saslo-settling-aot-fig8",
        "fig8.latency_sc_min",
        "%",
        target=99.42,
        tolerance=2,
    ),
    Claim(
        PAPER,
        "Fig. 6",
        "SSD: SEE's mean AVPE (better: 0.05 points below the fixed throttle's)",
        "SEE better than every other",
        "saslo-ssd",
        "fig6.see.avpe_mean",
        "%",
        direction=lambda m: m["fig6.see.avpe_mean"] < m["fig6.static.avpe_mean"] - 0.05,
        cause=ROOMY_CARD,
    ),
    Claim(
        PAPER,
        "Fig. 7",
        "SSD, a real trace: lowest mean SC rate over 1-15 VMs",
        "92.1 % (of 92.1-98.3 %)",
        "saslo-ssd",
        "fig7.sc_mean_min",
        "%",
        bound=lambda v: 92.1 <= v <= 98.3,
        direction=lambda m: m["fig7.sc_mean_min"] >= 90,
        cause=ROOMY_CARD,
    ),
]
