"""A self-contained report.html: profiles side by side, plots inlined, migrations and audit log."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from sova.control.experiment import ProfileResult

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{margin-bottom:0}.sub{color:#666;margin-top:.2em}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:right}th{background:#f4f4f4}
td.l,th.l{text-align:left}tr.sec td{background:#fafafa;font-weight:600;text-align:left}
.best{background:#e6f4ea;font-weight:600}figure{margin:1.5em 0}figcaption{color:#555;font-size:13px}
img{max-width:100%}details{margin:1em 0}code{background:#f4f4f4;padding:0 3px}
"""

# (section, label, path in the summary, format, lower is better?)
_ROWS = [
    ("CPU", "mean host utilisation", "cpu.host_util_mean", "{:.1%}", None),
    ("CPU", "hottest host, 95th percentile", "cpu.host_util_max_p95", "{:.1%}", True),
    ("CPU", "time with a host above 90 %", "cpu.hot_host_fraction", "{:.1%}", True),
    ("CPU", "mean Dom0 utilisation", "cpu.dom0_util_mean", "{:.1%}", None),
    ("Web services", "requests served", "services.served", "{:,.0f}", False),
    ("Web services", "requests dropped (timeout)", "services.dropped", "{:,.0f}", True),
    ("Web services", "mean response time", "services.response_mean", "ms", True),
    ("Web services", "p95 response time", "services.response_p95", "ms", True),
    ("Web services", "p99 response time", "services.response_p99", "ms", True),
    ("Batch jobs", "jobs completed", "batch.jobs", "{:,.0f}", False),
    ("Batch jobs", "mean completion time", "batch.completion_mean", "{:.1f} s", True),
    ("Storage", "mean IOPS", "storage.iops_mean", "{:,.0f}", False),
    ("Storage", "mean IO latency", "storage.latency_mean", "ms", True),
    ("Network", "mean of max NIC tx utilisation", "network.nic_tx_util_max_mean", "{:.1%}", True),
    ("Network", "mean of max link utilisation", "network.link_util_max_mean", "{:.1%}", True),
    ("Migrations", "completed", "migrations.completed", "{:d}", None),
    ("Migrations", "failed or cancelled", "migrations.failed", "{:d}", True),
    ("Migrations", "total time", "migrations.time_total", "{:.1f} s", True),
    ("Migrations", "data moved", "migrations.bytes", "GiB", True),
    ("Migrations", "mean downtime", "migrations.downtime_mean", "ms", True),
    ("Actions", "proposed", "actions.proposed", "{:d}", None),
    ("Actions", "rejected by safety rails", "actions.rejected", "{:d}", None),
    ("Energy", "energy", "energy_kwh", "{:.3f} kWh", True),
    ("Run", "simulated seconds per wall second", "speed", "{:,.0f}", None),
]


def metric_value(d: dict, path: str):
    """The value at a dotted path of a summary ('services.response_mean'), or None."""
    for k in path.split("."):
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _fmt(v, f: str) -> str:
    if v is None:
        return "–"
    if f == "ms":
        return f"{v * 1e3:.2f} ms"
    if f == "GiB":
        return f"{v / 2**30:.2f} GiB"
    return f.format(v)


def _summary_table(doc: dict) -> str:
    profiles = doc["profiles"]
    names = list(profiles)
    out = ['<table><tr><th class="l">metric</th>' + "".join(f"<th>{html.escape(n)}</th>" for n in names) + "</tr>"]
    section = None
    for sec, label, path, f, lower in _ROWS:
        vals = [metric_value(profiles[n], path) for n in names]
        if all(v is None for v in vals):
            continue
        if sec != section:
            out.append(f'<tr class="sec"><td colspan="{len(names) + 1}">{sec}</td></tr>')
            section = sec
        best = None
        nums = [v for v in vals if isinstance(v, int | float)]
        if lower is not None and len(names) > 1 and nums and len(set(nums)) > 1:
            best = min(nums) if lower else max(nums)
        cells = "".join(
            f'<td class="{"best" if best is not None and v == best else ""}">{_fmt(v, f)}</td>' for v in vals
        )
        out.append(f'<tr><td class="l">{label}</td>{cells}</tr>')
    out.append("</table>")
    return "\n".join(out)


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(path.stem)}">'


def _migrations(results: list[ProfileResult]) -> str:
    rows = []
    for r in results:
        for m in r.migrations:
            rows.append(
                f'<tr><td class="l">{html.escape(r.profile)}</td><td class="l">{html.escape(m.vm)}</td>'
                f'<td class="l">{m.src} → {m.dst}</td><td>{m.started:.0f}</td><td>{m.finished - m.started:.1f}</td>'
                f"<td>{m.bytes / 2**20:.0f}</td><td>{m.downtime * 1e3:.0f}</td><td>{m.rounds}</td>"
                f'<td class="l">{m.status}</td></tr>'
            )
    if not rows:
        return "<p>No migrations.</p>"
    head = (
        "<tr><th class='l'>profile</th><th class='l'>VM</th><th class='l'>move</th><th>start (s)</th>"
        "<th>duration (s)</th><th>MiB sent</th><th>downtime (ms)</th><th>rounds</th><th class='l'>status</th></tr>"
    )
    return "<table>" + head + "".join(rows) + "</table>"


def _audit(results: list[ProfileResult], limit: int = 200) -> str:
    parts = []
    for r in results:
        entries = r.audit.entries
        if not entries:
            continue
        rows = [
            f"<tr><td>{e.time:.0f}</td><td>{e.plan}</td><td class='l'>{e.event}</td><td class='l'>{html.escape(e.action)}</td>"
            f"<td class='l'>{html.escape(e.status)}</td><td class='l'>{html.escape(e.message or e.reason)}</td></tr>"
            for e in entries[:limit]
        ]
        more = f"<p>… and {len(entries) - limit} more in audit-{r.profile}.jsonl</p>" if len(entries) > limit else ""
        parts.append(
            f"<details><summary><b>{html.escape(r.profile)}</b>: {len(entries)} audit entries</summary><table>"
            "<tr><th>time (s)</th><th>plan</th><th class='l'>event</th><th class='l'>action</th>"
            "<th class='l'>status</th><th class='l'>reason / message</th></tr>"
            + "".join(rows)
            + "</table>"
            + more
            + "</details>"
        )
    return "".join(parts) or "<p>No policy proposed any action.</p>"


def render_report(doc: dict, results: list[ProfileResult], plots: list[tuple[str, Path]]) -> str:
    sc = doc["scenario"]
    figs = "".join(f"<figure>{_img(p)}<figcaption>{html.escape(c)}</figcaption></figure>" for c, p in plots)
    return f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>Sova report: {html.escape(sc["name"])}</title><style>{_CSS}</style></head><body>
<h1>{html.escape(sc["name"])}</h1>
<p class="sub">{sc["hosts"]} hosts, {sc["vms"]} VMs, {sc["duration"] / 60:.0f} simulated minutes, step {sc["step"]:g} s,
seed {sc["seed"]} &middot; Sova {doc["sova_version"]} &middot; <code>{html.escape(sc["source"])}</code></p>
<p>{html.escape(sc["description"])}</p>
<h2>Profiles side by side</h2>
<p>Same workload and seed for every profile. Green marks the better value where lower or higher is better.</p>
{_summary_table(doc)}
<h2>Plots</h2>{figs or "<p>Plots are turned off in [outputs].</p>"}
<h2>Migrations</h2>{_migrations(results)}
<h2>Audit log</h2>{_audit(results)}
</body></html>
"""
