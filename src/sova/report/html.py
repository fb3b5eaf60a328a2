"""A self-contained report.html: profiles side by side with their differences, the trade-off in words, the
experiment's own tables, plots inlined, migrations and audit log.

The profiles table compares every profile with the first: a difference column per profile, green where the
profile is better and red where it is worse, but only where the difference matters (report.tradeoff: at least
2 % and visible at the precision shown). A metric without a finite value shows "n/a", its reason in a tooltip
and in a footnote under the table. Long names are cut in the page and whole in their tooltip.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

from sova.experiments.scenario_runs import ProfileResult
from sova.model.scenario import Scenario
from sova.report.highlights import Highlight, highlights
from sova.report.metrics import Metric, format_value, is_number, metric_value, present_metrics, undefined_reason
from sova.report.names import NAME_WIDTH, truncate
from sova.report.tradeoff import MATERIAL_FRACTION, compare, matters, tradeoff_sentence

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{margin-bottom:0}.sub{color:#666;margin-top:.2em}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:right}th{background:#f4f4f4}
td.l,th.l{text-align:left}tr.sec td{background:#fafafa;font-weight:600;text-align:left}
th.d,td.d{color:#555;font-size:12px}
.best,.better{background:#e6f4ea;font-weight:600}.worse{background:#fce8e6}
.na{color:#888;cursor:help}.tradeoff{font-size:15px;margin:.6em 0}
ol.notes{font-size:12px;color:#555}figure{margin:1.5em 0}figcaption{color:#555;font-size:13px}
img{max-width:100%}details{margin:1em 0}code{background:#f4f4f4;padding:0 3px}
"""


def _name(full: str, width: int = NAME_WIDTH) -> str:
    """A name cut to width, the whole name in a tooltip when it was cut."""
    short = truncate(str(full), width)
    if short == full:
        return html.escape(full)
    return f'<span title="{html.escape(full)}">{html.escape(short)}</span>'


class _Footnotes:
    """Numbered reasons for the "n/a" cells of a table, one number per distinct reason."""

    def __init__(self) -> None:
        self.reasons: dict[str, list[str]] = {}

    def cell(self, reason: str, where: str, classes: str = "") -> str:
        number = list(self.reasons).index(reason) + 1 if reason in self.reasons else len(self.reasons) + 1
        self.reasons.setdefault(reason, []).append(where)
        return f'<td class="na {classes}" title="{html.escape(reason)}">n/a<sup>{number}</sup></td>'

    def html(self) -> str:
        if not self.reasons:
            return ""
        items = "".join(
            f"<li>n/a: {html.escape(reason)} ({html.escape('; '.join(where))})</li>"
            for reason, where in self.reasons.items()
        )
        return f'<ol class="notes">{items}</ol>'


def _value_cell(summary: dict, profile: str, metric: Metric, notes: _Footnotes, classes: str) -> str:
    reason = undefined_reason(summary, metric.path)
    if reason is not None:
        return notes.cell(reason, f"{profile}: {metric.label}", classes)
    return f'<td class="{classes}">{format_value(metric_value(summary, metric.path), metric.unit)}</td>'


def _best(metric: Metric, values: list) -> object | None:
    """The best of the values when the best and the worst differ in a way that matters; else None."""
    numbers = [value for value in values if is_number(value)]
    if metric.lower_is_better is None or len(numbers) < 2:
        return None
    best, worst = (min(numbers), max(numbers)) if metric.lower_is_better else (max(numbers), min(numbers))
    return best if matters(metric, worst, best) else None


def _summary_table(profiles: dict[str, dict]) -> str:
    names = list(profiles)
    head = f'<th class="l">metric</th><th>{_name(names[0])}</th>'
    head += "".join(f'<th>{_name(name)}</th><th class="d">vs {_name(names[0])}</th>' for name in names[1:])
    out = [f"<table><tr>{head}</tr>"]
    notes = _Footnotes()
    section = None
    for metric in present_metrics(list(profiles.values())):
        if metric.section != section:
            out.append(f'<tr class="sec"><td colspan="{2 * len(names)}">{html.escape(metric.section)}</td></tr>')
            section = metric.section
        out.append(_row(metric, profiles, notes))
    out.append("</table>")
    return "\n".join(out) + notes.html()


def _row(metric: Metric, profiles: dict[str, dict], notes: _Footnotes) -> str:
    """A metric's values, each but the first followed by its difference from the first."""
    names = list(profiles)
    base = profiles[names[0]]
    best = _best(metric, [metric_value(profiles[name], metric.path) for name in names])
    marks = {
        name: "best" if best is not None and metric_value(profiles[name], metric.path) == best else "" for name in names
    }
    cells = [_value_cell(base, names[0], metric, notes, marks[names[0]])]
    for name in names[1:]:
        difference = compare(metric, base, profiles[name])
        verdict = "" if difference.better is None else ("better" if difference.better else "worse")
        cells.append(_value_cell(profiles[name], name, metric, notes, marks[name]))
        cells.append(f'<td class="d {verdict}">{html.escape(difference.text())}</td>')
    return f'<tr><td class="l">{html.escape(metric.label)}</td>{"".join(cells)}</tr>'


def _tradeoffs(profiles: dict[str, dict]) -> str:
    names = list(profiles)
    if len(names) < 2:
        return ""
    metrics = present_metrics(list(profiles.values()))
    sentences = [tradeoff_sentence(names[0], profiles[names[0]], name, profiles[name], metrics) for name in names[1:]]
    return "".join(f'<p class="tradeoff">{html.escape(sentence)}</p>' for sentence in sentences)


def _highlight(table: Highlight) -> str:
    """A highlight table: names cut to width (whole in a tooltip), words left- and numbers right-aligned."""

    def cell(k: int, text: str) -> str:
        shown = _name(text) if k in table.name_columns else html.escape(text)
        return f'<td class="{"l" if table.left_aligned(k) else ""}">{shown}</td>'

    head = "".join(
        f'<th class="{"l" if table.left_aligned(column_index) else ""}">{html.escape(column)}</th>'
        for column_index, column in enumerate(table.columns)
    )
    rows = "".join(
        "<tr>" + "".join(cell(column_index, text) for column_index, text in enumerate(row)) + "</tr>"
        for row in table.rows
    )
    note = f'<p class="sub">{html.escape(table.note)}</p>' if table.note else ""
    return f"<h3>{html.escape(table.title)}</h3><table><tr>{head}</tr>{rows}</table>{note}"


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(path.stem)}">'


def _migrations(results: list[ProfileResult]) -> str:
    rows = []
    for result in results:
        for migration in result.migrations:
            rows.append(
                f'<tr><td class="l">{_name(result.profile)}</td><td class="l">{_name(migration.vm)}</td>'
                f'<td class="l">{_name(migration.src)} → {_name(migration.dst)}</td><td>{migration.started:.0f}</td>'
                f"<td>{migration.finished - migration.started:.1f}</td><td>{migration.bytes / 2**20:.0f}</td><td>{migration.downtime * 1e3:.0f}</td>"
                f'<td>{migration.rounds}</td><td class="l">{html.escape(migration.status)}</td></tr>'
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
    for result in results:
        entries = result.audit.entries
        if not entries:
            continue
        rows = [
            f"<tr><td>{entry.time:.0f}</td><td>{entry.plan}</td><td class='l'>{entry.event}</td><td class='l'>{html.escape(entry.action)}</td>"
            f"<td class='l'>{html.escape(entry.status)}</td><td class='l'>{html.escape(entry.message or entry.reason)}</td></tr>"
            for entry in entries[:limit]
        ]
        more = (
            f"<p>… and {len(entries) - limit} more in audit-{result.profile}.jsonl</p>" if len(entries) > limit else ""
        )
        parts.append(
            f"<details><summary><b>{_name(result.profile)}</b>: {len(entries)} audit entries</summary><table>"
            "<tr><th>time (s)</th><th>plan</th><th class='l'>event</th><th class='l'>action</th>"
            "<th class='l'>status</th><th class='l'>reason / message</th></tr>"
            + "".join(rows)
            + "</table>"
            + more
            + "</details>"
        )
    return "".join(parts) or "<p>No policy proposed any action.</p>"


def render_report(
    doc: dict, results: list[ProfileResult], plots: list[tuple[str, Path]], scenario: Scenario | None = None
) -> str:
    """The page; with the scenario, the experiment's tables are split at its workload phases."""
    sc = doc["scenario"]
    profiles = doc["profiles"]
    figs = "".join(
        f"<figure>{_img(path)}<figcaption>{html.escape(caption)}</figcaption></figure>" for caption, path in plots
    )
    found = "".join(_highlight(table) for table in highlights(results, scenario, migrations=False))
    rule = (
        f"Each profile is compared with the first, {_name(next(iter(profiles)))}. Green marks the better value and "
        f"red the worse, only where the difference matters: at least {MATERIAL_FRACTION:.0%} of the larger value and "
        "visible at the precision shown. n/a: the run has no finite value; the reason is in the tooltip and below."
    )
    return f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>Sova report: {html.escape(sc["name"])}</title><style>{_CSS}</style></head><body>
<h1>{html.escape(sc["name"])}</h1>
<p class="sub">{sc["hosts"]} hosts, {sc["vms"]} VMs, {sc["duration"] / 60:.0f} simulated minutes, step {sc["step"]:g} s,
seed {sc["seed"]} &middot; Sova {doc["sova_version"]} &middot; <code>{html.escape(sc["source"])}</code></p>
<p>{html.escape(sc["description"])}</p>
<h2>Profiles side by side</h2>
{_tradeoffs(profiles)}
<p>Same workload and seed for every profile. {rule}</p>
{_summary_table(profiles)}
{f"<h2>What the experiment shows</h2>{found}" if found else ""}
<h2>Plots</h2>{figs or "<p>Plots are turned off in [outputs].</p>"}
<h2>Migrations</h2>{_migrations(results)}
<h2>Audit log</h2>{_audit(results)}
</body></html>
"""
