"""What a run says of its experiment's own question, as small tables the terminal and the report both show.

Each table appears only when the results hold what it needs, never by scenario name:
- SR-IOV VF holders at the end of each workload phase (the Sova paper's Table 2), when VFs changed hands;
- VF hand-overs and migrations in time order, with the phase each fell in (Sova §5.3 and Table 3);
- the findings the plans rested on (hot hosts, intensity classes): a count per kind;
- response time per web service (quickstart, small web set-ups), or of the slowest few of many;
- each VM's intensity factors IF, NF, io_degree and net_degree, with [outputs] intensity (Table 1).
Phases are the times at which any workload changes (its `phases`); without a scenario there is one phase.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

from sova.experiments.scenario_runs import ProfileResult
from sova.model.scenario import Scenario
from sova.report.metrics import NOT_AVAILABLE, is_number
from sova.report.names import natural_key, truncate

EVENTS_MAX = 20  # VF events or migrations listed per profile; the rest are counted
SERVICES_MAX = 12  # services shown one by one; more are a distribution (services.png) and the slowest few
SLOWEST_SHOWN = 10
VMS_MAX = 40  # intensity rows shown


@dataclass
class Highlight:
    """A small table: a title, column names, rows of display strings, and a note under it.

    Cells hold full names; whoever shows the table cuts the `name_columns` to width (the page keeps the
    full name in a tooltip).
    """

    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""
    name_columns: tuple[int, ...] = (0,)

    def left_aligned(self, column: int) -> bool:
        """Names and words are left-aligned, numbers right-aligned (judged by the first row)."""
        return column in self.name_columns or not (self.rows and _numeric(self.rows[0][column]))


def _numeric(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return text == "n/a"
    return True


def phase_bounds(scenario: Scenario | None, results: list[ProfileResult]) -> list[float]:
    """Start of the run, every time a workload changes phase inside it, and the end of the run."""
    end = max(float(result.series["time"][-1]) for result in results) if results else 0.0
    if scenario is not None:
        end = float(scenario.duration)
    changes = set()
    for workload in scenario.workloads if scenario is not None else ():
        changes.update(phase.at for phase in workload.phases if 0 < phase.at < end)
    return [0.0, *sorted(changes), end]


def phase_labels(bounds: list[float]) -> list[str]:
    """ "0–10 min", "10–20 min", ...: each phase's span, in minutes for runs of two minutes or more."""
    scale, unit = (60, "min") if bounds[-1] >= 120 else (1, "s")
    return [f"{start / scale:g}–{end / scale:g} {unit}" for start, end in pairwise(bounds)]


def _phase_of(t: float, bounds: list[float]) -> str:
    """The label of the phase time t falls in (the last phase for the run's end)."""
    starts = bounds[1:-1]
    return phase_labels(bounds)[sum(t >= start for start in starts)]


def vf_holders_by_phase(results: list[ProfileResult], bounds: list[float]) -> Highlight | None:
    """Which VMs hold a VF when each phase ends (its steady state), per profile that moved any VF."""
    if not _any_vf(results):
        return None
    rows = [
        [label] + [" ".join(result.vf_holders(end - 1e-6)) or "none" for result in results]
        for label, end in zip(phase_labels(bounds), bounds[1:], strict=True)
    ]
    events = ", ".join(f"{result.profile} {len(result.vf_events)}" for result in results)
    note = f"Holders at the end of each phase (a workload change starts a phase). VF events: {events}."
    return Highlight("SR-IOV VF holders per phase", ["phase"] + [result.profile for result in results], rows, note)


def timeline(results: list[ProfileResult], bounds: list[float], migrations: bool = True) -> Highlight | None:
    """VF attach/detach events (and migrations, unless told not to) in time order, at most EVENTS_MAX per profile.

    The phase column appears only when the run has more than one phase. Host names are cut to width here,
    since a move names two.
    """
    phased = len(bounds) > 2
    rows, more = [], []
    for result in results:
        events = [(when, f"VF {event}", vm, truncate(host)) for when, vm, host, event in result.vf_events]
        if migrations:
            events += [
                (
                    migration.started,
                    f"migration ({migration.status})",
                    migration.vm,
                    f"{truncate(migration.src)} → {truncate(migration.dst)}",
                )
                for migration in result.migrations
            ]
        events.sort(key=lambda entry: entry[0])
        for when, what, vm, where in events[:EVENTS_MAX]:
            rows.append(
                [result.profile, f"{when:,.0f}"] + ([_phase_of(when, bounds)] if phased else []) + [vm, what, where]
            )
        if len(events) > EVENTS_MAX:
            more.append(f"{result.profile}: {len(events) - EVENTS_MAX} more")
    if not rows:
        return None
    note = "; ".join(more) + (" (all in summary.json and the audit log)." if more else "")
    columns = ["profile", "time (s)"] + (["phase"] if phased else []) + ["VM", "event", "host or move"]
    moved = migrations and any(result.migrations for result in results)
    kinds = [name for name, found in (("VF hand-overs", _any_vf(results)), ("migrations", moved)) if found]
    title = " and ".join(kinds) if _any_vf(results) else "Migrations"
    return Highlight(title, columns, rows, note, name_columns=(0, columns.index("VM")))


def findings_behind_plans(results: list[ProfileResult]) -> Highlight | None:
    """Per profile and kind of finding: how many findings the audit log records behind the plans, in how
    many plans, and the host or VM they were most often about."""
    rows = []
    for result in results:
        by_kind: dict[str, list] = {}
        for entry in result.audit.entries:
            if entry.event == "finding":
                by_kind.setdefault(entry.action, []).append(entry)
        for kind, found in by_kind.items():
            about, times = Counter(finding.target for finding in found).most_common(1)[0]
            plans = len({finding.plan for finding in found})
            rows.append([result.profile, kind, str(len(found)), str(plans), f"{about} ({times})"])
    if not rows:
        return None
    note = 'Each finding is in the audit log (event "finding"), before the actions of its plan.'
    columns = ["profile", "kind", "findings", "plans", "most often about"]
    return Highlight("Findings behind the plans", columns, rows, note, name_columns=(0, 4))


def _any_vf(results: list[ProfileResult]) -> bool:
    return any(result.vf_events for result in results)


def milliseconds(value) -> str:
    """A time in seconds as milliseconds for a table cell, or "n/a" without a finite value."""
    return f"{value * 1e3:.2f}" if is_number(value) else NOT_AVAILABLE


def service_response_times(results: list[ProfileResult]) -> Highlight | None:
    """Mean and p95 response time of each web service per profile; with more than SERVICES_MAX services,
    of the SLOWEST_SHOWN slowest by their p95 in any profile (a service with nothing served first)."""
    with_services = [result for result in results if result.services]
    if not with_services:
        return None
    count = len(with_services[0].services)

    def worst_p95(k: int) -> float:
        p95 = [result.services[k]["response_p95"] for result in with_services]
        return max((seconds for seconds in p95 if is_number(seconds)), default=math.inf)

    shown = range(count)
    title = "Response time per web service"
    if count > SERVICES_MAX:
        shown = sorted(shown, key=worst_p95, reverse=True)[:SLOWEST_SHOWN]
        title = f"The {len(shown)} slowest of {count} web services (by p95 in any profile)"
    columns = ["service"] + [
        f"{result.profile} {stat}" for result in with_services for stat in ("mean (ms)", "p95 (ms)")
    ]
    rows = []
    for service_index in shown:
        cells = [with_services[0].services[service_index]["server"]]
        for result in with_services:
            cells += [
                milliseconds(result.services[service_index]["response_mean"]),
                milliseconds(result.services[service_index]["response_p95"]),
            ]
        rows.append(cells)
    return Highlight(title, columns, rows)


def intensity(results: list[ProfileResult]) -> list[Highlight]:
    """Each VM's IF, NF, io_degree and net_degree over the run, per profile that measured them."""
    tables = []
    for result in results:
        factors = result.summary.get("intensity")
        if not factors:
            continue
        vms = sorted(factors, key=natural_key)
        rows = [
            [vm] + [f"{factors[vm][factor]:.3g}" for factor in ("IF", "NF", "io_degree", "net_degree")]
            for vm in vms[:VMS_MAX]
        ]
        note = f"{len(vms) - VMS_MAX} more VMs in summary.json." if len(vms) > VMS_MAX else ""
        tables.append(
            Highlight(
                f"{result.profile}: intensity of each VM", ["VM", "IF", "NF", "io_degree", "net_degree"], rows, note
            )
        )
    return tables


def highlights(
    results: list[ProfileResult], scenario: Scenario | None = None, migrations: bool = True
) -> list[Highlight]:
    """Every table the results give, in the order a reader of the experiment asks for them; `migrations`
    False leaves migrations out of the timeline (for a page that lists them in full elsewhere)."""
    bounds = phase_bounds(scenario, results)
    found = [
        vf_holders_by_phase(results, bounds),
        timeline(results, bounds, migrations),
        findings_behind_plans(results),
        service_response_times(results),
    ]
    return [highlight for highlight in found if highlight is not None] + intensity(results)
