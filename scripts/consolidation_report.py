"""Tables and plots of consolidation studies (CloudSim's metrics per profile), shared by
planetlab_study.py and bitbrains_study.py: `summaries` maps each run (a day, a week) to its summary.json
profiles; a table gives each profile's median over the runs."""

from __future__ import annotations

import statistics
from pathlib import Path

COLUMNS = (  # summary key (dotted: nested), column title, format
    ("energy_kwh", "energy (kWh)", "{:.1f}"),
    ("migrations.count", "migrations", "{:.0f}"),
    ("slatah_pct", "SLATAH (%)", "{:.3f}"),
    ("pdm_pct", "PDM (%)", "{:.5f}"),
    ("slav", "SLAV (x1e-5)", "{:.4f}"),
    ("esv", "ESV (x1e-3)", "{:.4f}"),
    ("host_shutdowns", "host shutdowns", "{:.0f}"),
)
SCALE = {"slav": 1e5, "esv": 1e3, "network.link_util_max_mean": 100.0, "storage.latency_mean": 1e3}


def value(profile: dict, key: str) -> float:
    for part in key.split("."):
        profile = profile[part]
    return float(profile)


def median_table(summaries: dict[str, dict], columns: tuple = COLUMNS) -> str:
    """Medians over the runs per profile, and the runs' range of energy when there are several."""
    profiles = list(next(iter(summaries.values())))
    several = len(summaries) > 1
    head = (
        "| profile | " + " | ".join(title for _, title, _ in columns) + (" | energy range (kWh) |" if several else " |")
    )
    rows = [head + "\n", "|---" * (len(columns) + 1 + several) + "|\n"]
    for name in profiles:
        cells = []
        for key, _, form in columns:
            median = statistics.median(value(run[name], key) for run in summaries.values())
            cells.append(form.format(median * SCALE.get(key, 1.0)))
        energy = [run[name]["energy_kwh"] for run in summaries.values()]
        spread = f" {min(energy):.1f}-{max(energy):.1f} |" if several else ""
        rows.append(f"| `{name}` | " + " | ".join(cells) + " |" + spread + "\n")
    return "".join(rows)


def plot(summaries: dict[str, dict], path: Path, title: str, group=lambda name: name.split("-")[0]) -> None:
    """Median energy against median SLAV, one point per profile but NPA (every host at full power would
    flatten the rest), coloured by `group` of the profile's name (the detector by default)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    profiles = [name for name in next(iter(summaries.values())) if name != "npa"]
    colours: dict[str, str] = {}
    for name in profiles:
        energy = statistics.median(run[name]["energy_kwh"] for run in summaries.values())
        slav = statistics.median(run[name]["slav"] for run in summaries.values())
        kind = group(name)
        first = kind not in colours
        colour = colours.setdefault(kind, f"C{len(colours)}")
        ax.scatter(slav * 1e5, energy, color=colour, label=kind if first else None)
        ax.annotate(name, (slav * 1e5, energy), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.legend(fontsize=8)
    median = " (medians over the runs)" if len(summaries) > 1 else ""
    ax.set_xlabel(f"SLAV (x1e-5){median}")
    ax.set_ylabel(f"energy (kWh){median}")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
