"""Replay of real traces (PlanetLab, Bitbrains): a trace set spread over an entry's VMs, series stacked
per instance, and the value of a series over a step at any step length."""

from __future__ import annotations

import numpy as np

from sova.model.scenario import WorkloadSpec
from sova.sim.traces import TraceError, is_trace_set, read_traces, trace_set
from sova.sim.workload_kinds.base import Group


def trace_files(spec: WorkloadSpec, vms: int) -> list[dict] | None:
    """A trace set's files for the entry's VMs, one each in the set's order (or drawn with replacement), as each
    VM's `file` (None: the entry names one file)."""
    file = spec.params.get("file")
    if not file or not is_trace_set(file):
        return None
    try:
        files = trace_set(file, spec.params.get("order", "name"))
    except TraceError as exc:
        raise TraceError(f"{spec.where or 'a workload'}.file: {exc}") from None
    if spec.params.get("draw") == "with-replacement":  # a sample of the set, stated as such in the docs
        picks = np.random.default_rng(spec.params.get("draw_seed", 1)).integers(0, len(files), vms)
        return [{"file": files[k]} for k in picks]
    if len(files) < vms:
        raise TraceError(
            f"{spec.where or 'a workload'}.file: {file} holds {len(files)} trace(s) for {vms} VMs; "
            "expected one trace per VM the entry names (fewer VMs, or a larger set)"
        )
    return [{"file": f} for f in files[:vms]]


def read_group_traces(g: Group, specs: tuple[WorkloadSpec, ...]) -> list:
    """Every instance's trace, read once; an error names the scenario entry that asked for the file."""
    try:
        loaded = read_traces(g.kind, list(g.params["file"]))
    except TraceError as exc:  # name the scenario entry too: the file alone does not say who read it
        failed = str(exc)
        entry = next(
            (
                specs[s].where
                for s, f in zip(g.spec_index, g.params["file"], strict=True)
                if f.partition(".tar.gz:")[0] in failed
            ),
            "",
        )
        raise TraceError(f"{entry or 'a workload'}.file: {exc}") from None
    return loaded


def stacked(arrays: list[np.ndarray]) -> np.ndarray:
    """Stack series of unequal length; shorter ones wrap around (traces repeat)."""
    n = max(len(a) for a in arrays)
    return np.stack([np.resize(a, n) for a in arrays])


def series_at(
    g: Group, key: str, t: float, dt: float = 0.0, scale: np.ndarray | None = None, upper: float | None = None
) -> np.ndarray:
    """Each instance's trace over the step [t, t + dt), times `scale` and at most `upper`, wrapping at the
    end: the sample holding at t while the step is no longer than the trace's sampling, else the
    time-weighted mean over the samples the step covers (a 300 s step over a 60 s trace is the mean of
    five samples, not the first of them), each scaled and capped before the mean, as fine steps would."""
    s = g.series[key]
    coarse = dt > g.params["interval"]
    if not coarse.any():
        idx = ((t + g.params["offset"]) // g.params["interval"]).astype(np.int64) % s.shape[1]
        return _scaled(s[np.arange(len(g)), idx], scale, upper)
    if scale is None and upper is None:
        cumulative = g.cumulative.setdefault(key, _running_sum(s))
    else:
        s, cumulative = _scaled(s, None if scale is None else scale[:, None], upper), None
    start = t + g.params["offset"]
    return (_integral(g, s, start + dt, cumulative) - _integral(g, s, start, cumulative)) / dt


def _scaled(values: np.ndarray, scale: np.ndarray | None, upper: float | None) -> np.ndarray:
    values = values if scale is None else values * scale
    return values if upper is None else np.clip(values, 0.0, upper)


def _running_sum(s: np.ndarray) -> np.ndarray:
    return np.concatenate([np.zeros((len(s), 1)), np.cumsum(s, axis=1)], axis=1)


def _integral(g: Group, s: np.ndarray, x: np.ndarray, cumulative: np.ndarray | None) -> np.ndarray:
    """The integral of each instance's series from its start to x seconds (sample-and-hold, wrapping)."""
    interval = g.params["interval"]
    cum = _running_sum(s) if cumulative is None else cumulative
    length, rows = s.shape[1], np.arange(len(g))
    samples = x / interval
    cycles = np.floor(samples / length)
    within = samples - cycles * length
    whole = np.minimum(np.floor(within).astype(np.int64), length - 1)
    return interval * (cycles * cum[:, length] + cum[rows, whole] + (within - whole) * s[rows, whole])
