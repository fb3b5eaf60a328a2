"""The per-step metrics of a run, a sweep or a study as one tidy Parquet table (pyarrow).

One row per profile and recorded step, with the columns that say which run it is first: ``scenario``,
``profile``, ``seed``, the scenario's [params] values, the swept key's value in a sweep, then ``time`` and
the metrics (the columns of metrics-PROFILE.csv). Tables of several runs stack: a study's days, or a sweep's
values, are one ``polars.read_parquet("STUDY/*/metrics.parquet")`` (or a pyarrow dataset of the folder) away.
A metric one profile records and another not (the hottest hosts' columns name hosts) is null there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sova.experiments.scenario_runs import ProfileResult
from sova.model.scenario import Scenario

FILE = "metrics.parquet"


def run_table(scenario: Scenario, results: list[ProfileResult], extra: dict[str, Any] | None = None) -> pa.Table:
    """The rows of every profile of one scenario; `extra` adds constant columns (a sweep's value)."""
    tables = []
    for r in results:
        rows = len(next(iter(r.series.values()))) if r.series else 0
        labels = {"scenario": scenario.name, "profile": r.profile, "seed": r.summary.get("seed", scenario.seed)}
        columns = label_columns({**labels, **scenario.params, **(extra or {})}, rows)
        columns |= {name: pa.array(np.asarray(values)) for name, values in r.series.items()}
        tables.append(pa.table(columns))
    return stacked(tables)


def label_columns(labels: dict[str, Any], rows: int) -> dict[str, pa.Array]:
    """Columns that say which run the rows are: each label repeated on every row."""
    return {name: pa.array([value] * rows) for name, value in labels.items()}


def stacked(tables: list[pa.Table]) -> pa.Table:
    """Tables one under the other; a column some lack is null there (and its type widened if need be)."""
    return pa.concat_tables(tables, promote_options="permissive") if tables else pa.table({})


def write_table(table: pa.Table, path: Path) -> None:
    pq.write_table(table, path, compression="zstd")
