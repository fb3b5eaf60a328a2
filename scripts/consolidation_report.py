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
SCALE = {"slav": 1e5, "esv": 1e3, "network.link_util_max_mean": 100.0}


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
    """Median energy against median SLAV, and against SLATAH (SLAV is 0 without migrations, whatever the
    hosts' overload), one point per profile but NPA (every host at full power would flatten the rest),
    coloured by `group` of the profile's name (the detector by default)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    profiles = [name for name in next(iter(summaries.values())) if name != "npa"]
    median = " (medians over the runs)" if len(summaries) > 1 else ""
    for ax, (key, label, scale) in zip(
        axes, (("slav", "SLAV (x1e-5)", 1e5), ("slatah_pct", "SLATAH (%)", 1.0)), strict=True
    ):
        colours: dict[str, str] = {}
        for name in profiles:
            energy = statistics.median(run[name]["energy_kwh"] for run in summaries.values())
            x = statistics.median(run[name][key] for run in summaries.values()) * scale
            kind = group(name)
            first = kind not in colours
            colour = colours.setdefault(kind, f"C{len(colours)}")
            ax.scatter(x, energy, color=colour, label=kind if first else None)
            ax.annotate(name, (x, energy), fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.set_xlabel(label + median)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"energy (kWh){median}")
    axes[1].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
