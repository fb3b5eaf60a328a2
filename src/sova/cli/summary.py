"""What ``sova run`` prints when a run ends: the profiles side by side with their differences and trade-off, the
experiment's own tables (VF holders per phase, hand-overs and migrations, per-service response times, intensity),
and for a sweep its metric against its axis.

The rows, units, the "matters" rule and the tables are the report's (sova.report.metrics, .tradeoff,
.highlights), so the terminal and report.html never disagree. A metric without a finite value prints "n/a".
"""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from sova.cli.common import out
from sova.report.highlights import Highlight, highlights
from sova.report.metrics import format_value, is_number, metric_value, present_metrics
from sova.report.names import truncate
from sova.report.tradeoff import compare, tradeoff_sentence


def print_sweep(sweep, sweep_runs) -> None:
    from sova.report.sweep_report import SWEPT, swept

    profiles = [r.profile for r in sweep_runs[0].results]
    label, path, scale, unit = next(
        swept(label, path) for label, path in SWEPT if metric_value(sweep_runs[0].results[0].summary, path) is not None
    )
    t = Table(title=f"{label} ({unit}) against {sweep.axis}")
    t.add_column(sweep.axis, justify="right")
    for p in profiles:
        t.add_column(escape(p), justify="right")
    for run in sweep_runs:
        vals = [metric_value(r.summary, path) for r in run.results]
        t.add_row(escape(str(run.value)), *(f"{v * scale:.3g}" if is_number(v) else "n/a" for v in vals))
    out.print(t)


def print_summary(results, scenario=None) -> None:
    """The profiles table, the trade-off of each profile against the first, and the experiment's tables.

    `scenario` (optional) gives the workload phases, so that VF holders and events are shown per phase.
    """
    out.print(_profiles_table(results))
    summaries = [r.summary for r in results]
    metrics = present_metrics(summaries)
    for r in results[1:]:
        out.print(tradeoff_sentence(results[0].profile, summaries[0], r.profile, r.summary, metrics), markup=False)
    for table in highlights(results, scenario):
        out.print(_rich_table(table))
        if table.note:
            out.print(table.note, markup=False, style="dim")


def _profiles_table(results) -> Table:
    """The brief metrics; a profile's value is green or red where it is better or worse than the first's in a
    way that matters. With two profiles a difference column follows (more would not fit 80 columns)."""
    base = results[0]
    with_difference = len(results) == 2
    t = Table(title="Summary", show_lines=False)
    t.add_column("metric", no_wrap=True)
    for r in results:
        t.add_column(escape(r.profile), justify="right")
    if with_difference:
        t.add_column(f"vs {escape(base.profile)}", justify="right")
    section = None
    for metric in present_metrics([r.summary for r in results]):
        if not metric.brief:
            continue
        if metric.section != section:
            section = metric.section
            t.add_row(f"[bold]{escape(section)}[/]")
        cells = [format_value(metric_value(base.summary, metric.path), metric.unit)]
        for r in results[1:]:
            d = compare(metric, base.summary, r.summary)
            cells.append(_coloured(format_value(d.other, metric.unit), d.better))
        if with_difference:
            cells.append(_coloured(d.text(), d.better))
        t.add_row(f"  {escape(metric.label)}", *cells)
    return t


def _coloured(text: str, better: bool | None) -> str:
    return escape(text) if better is None else f"[{'green' if better else 'red'}]{escape(text)}[/]"


def _rich_table(table: Highlight) -> Table:
    """A highlight as a rich table; name columns are cut by report.names and kept whole by rich."""
    rows = [[truncate(c) if k in table.name_columns else c for k, c in enumerate(row)] for row in table.rows]
    t = Table(title=escape(table.title))
    for k, column in enumerate(table.columns):
        names = k in table.name_columns
        t.add_column(
            escape(column),
            justify="left" if table.left_aligned(k) else "right",
            no_wrap=names,
            min_width=max(len(row[k]) for row in rows) if names else None,
        )
    for row in rows:
        t.add_row(*(escape(c) for c in row))
    return t
