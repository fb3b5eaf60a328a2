"""What a run that failed part-way leaves in its result directory: every run that finished, and the error.

A bug met in the tenth hour of a study, or while its report is drawn, must not cost the nine hours before it.
``sova run`` gathers the results as the runs end (``Salvage``); when a run raises, or writing the full
results does, it writes this smaller set instead, each part on its own so that one more failure loses no
other part:

- ``error.txt``: which run failed (or that writing failed), the error and its traceback;
- ``summary.json``: the scenario, ``"incomplete"`` (what failed, how many runs finished of how many) and the
  finished runs' summaries (a profile's, with its sweep value; or a trial's outcome);
- ``metrics.parquet`` (and ``audit-PROFILE.jsonl``) of the finished profiles, as a complete run writes them.
"""

from __future__ import annotations

import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sova import __version__
from sova.experiments.scenario_runs import ProfileResult
from sova.experiments.trials import TrialRun
from sova.model.scenario import Scenario
from sova.report.metrics_table import FILE, run_table, stacked, write_table
from sova.report.summary_file import scenario_header, write_summary

ERROR_FILE = "error.txt"


@dataclass
class Salvage:
    """The runs that finished, and what failed (nothing yet: `failed` is empty)."""

    total: int  # runs the study has in all
    # (the scenario it ran, which run: {"profile": ...} and in a sweep {KEY: value}, its result)
    profiles: list[tuple[Scenario, dict[str, Any], ProfileResult]] = field(default_factory=list)
    trials: list[TrialRun] = field(default_factory=list)
    failed: str = ""  # which run failed ("profile threshold at rate = 3"), or "writing the results"
    error: str = ""
    trace: str = ""

    def fail(self, failed: str, error: str, trace: str) -> None:
        self.failed, self.error, self.trace = failed, error, trace

    @property
    def finished(self) -> int:
        return len(self.profiles) + len({run.trial for run in self.trials})


def write_salvage(d: Path, scenario: Scenario, salvage: Salvage) -> list[str]:
    """The salvaged results into (staging) directory d; the parts that could not be written, each with why."""
    (d / ERROR_FILE).write_text(
        f"{salvage.failed} failed: {salvage.error}\n\n{salvage.trace}\n"
        f"{salvage.finished} of {salvage.total} runs finished; their results are beside this file.\n",
        encoding="utf-8",
    )
    lost = []
    for part, write in (("summary.json", _summary), (FILE, _metrics), ("audit files", _audits)):
        try:
            write(d, scenario, salvage)
        except Exception as exc:  # each part on its own: one more bug loses no other part
            lost.append(f"{part}: {type(exc).__name__}: {exc}")
            with (d / ERROR_FILE).open("a", encoding="utf-8") as f:
                f.write(f"\n{part} could not be written:\n{traceback.format_exc()}")
    return lost


def _summary(d: Path, scenario: Scenario, salvage: Salvage) -> None:
    doc: dict[str, Any] = {
        "sova_version": __version__,
        "scenario": {**scenario_header(scenario), "hosts": len(scenario.hosts), "vms": len(scenario.vms)},
        "incomplete": {
            "failed": salvage.failed,
            "error": salvage.error,
            "finished": salvage.finished,
            "runs": salvage.total,
        },
    }
    if salvage.profiles:
        doc["runs"] = [{**which, "summary": result.summary} for _, which, result in salvage.profiles]
    if salvage.trials:
        doc["trials"] = [asdict(run) for run in salvage.trials]
    write_summary(d, doc)


def _metrics(d: Path, scenario: Scenario, salvage: Salvage) -> None:
    tables = [
        run_table(ran, [result], {k: v for k, v in which.items() if k != "profile"})
        for ran, which, result in salvage.profiles
    ]
    if tables:
        write_table(stacked(tables), d / FILE)


def _audits(d: Path, scenario: Scenario, salvage: Salvage) -> None:
    for _, which, result in salvage.profiles:
        if result.audit.entries and len(which) == 1:  # as a complete run, a sweep's runs have no audit files
            result.audit.write_jsonl(d / f"audit-{result.profile}.jsonl")
