"""Workload generators, vectorized per kind: what each VM asks of the hardware at each step.

- lookbusy: a CPU burner at a load level, running a fraction ``duty`` of every ``period``.
- netperf: a TCP stream to or from a peer, with the same duty cycle.
- httperf: requests at a rate against a web server in the VM, each answered with a page.
- fio: a stream of IOs of a size at a rate against the VM's storage server.
- transfer: one copy of ``size`` bytes to a peer (scp), with the sender's cipher CPU; reports its time.
- batch: CPU jobs of fixed work, one after another (sysbench-like); reports completion times.
- planetlab / bitbrains: replay of real traces (CPU; and memory, disk and network for Bitbrains).

A workload only states demand; what it gets is decided by the simulator's physics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sova.model.name_match import NameMatcher
from sova.model.scenario import Scenario, WorkloadSpec, peer_name
from sova.sim.traces import TraceError, is_trace_set, read_traces, trace_set


def on_fraction(t: float, dt: float, period: np.ndarray, duty: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """Fraction of [t, t+dt) during which an on/off cycle (on for duty*period each period) is on."""

    def cum(y: np.ndarray) -> np.ndarray:
        k = np.floor(y / period)
        return k * duty * period + np.minimum(y - k * period, duty * period)

    return (cum(t + dt + phase) - cum(t + phase)) / dt


@dataclass
class Group:
    """Instances of one workload kind: one row per (workload, VM)."""

    kind: str
    vm: np.ndarray
    params: dict[str, np.ndarray]
    phase: np.ndarray
    spec_index: np.ndarray
    flows: dict[str, np.ndarray] = field(default_factory=dict)
    state: dict[str, np.ndarray] = field(default_factory=dict)
    series: dict[str, np.ndarray] = field(default_factory=dict)
    cumulative: dict[str, np.ndarray] = field(default_factory=dict)  # running sums of series, for coarse steps

    def __len__(self) -> int:
        return len(self.vm)


_ENDPOINT_EXTERNAL = -1


class Workloads:
    """All workloads of a scenario, grouped by kind, with phase changes applied on time."""

    def __init__(self, scenario: Scenario, rng: np.random.Generator):
        self.scenario = scenario
        vm_index = scenario.vm_index()
        names = [v.name for v in scenario.vms]
        self.vcpus = np.array([v.vcpus for v in scenario.vms], dtype=float)
        matching = NameMatcher(names)
        self.memory_used = np.zeros(len(names))  # MiB the workloads of each VM say they keep in use
        rows: dict[str, list[tuple[int, int, dict]]] = {}
        for s, spec in enumerate(scenario.workloads):
            names_here = matching(spec.vm)
            files = _trace_files(spec, len(names_here))
            for k, name in enumerate(names_here):
                self.memory_used[vm_index[name]] += spec.memory_used
                params = {k: peer_name(v, name) if k in ("peer", "client") else v for k, v in spec.params.items()}
                if files is not None:
                    params["file"] = files[k]
                rows.setdefault(spec.kind, []).append((s, vm_index[name], params))
        self.groups: dict[str, Group] = {}
        for kind, items in rows.items():
            self.groups[kind] = self._make_group(kind, items, scenario.workloads, vm_index, rng, scenario.step)
        self._events = self._phase_events(scenario.workloads)
        self._next_event = 0

    @staticmethod
    def _make_group(kind, items, specs: tuple[WorkloadSpec, ...], vm_index, rng, step: float) -> Group:
        spec_idx = np.array([s for s, _, _ in items])
        vm = np.array([v for _, v, _ in items], dtype=np.int64)
        keys = items[0][2].keys()
        params = {}
        for k in keys:
            vals = [p[k] for _, _, p in items]
            if k in ("peer", "client"):
                params[k] = np.array([_ENDPOINT_EXTERNAL if x == "external" else vm_index[x] for x in vals])
            elif isinstance(vals[0], str):
                params[k] = np.array(vals, dtype=object)
            else:
                params[k] = np.array(vals, dtype=float)
        stagger = np.array([specs[s].stagger for s in spec_idx])
        period = params.get("period", np.ones(len(vm)))
        # a random start on a whole step of the period, as a scripted benchmark starts on a whole second
        phase = np.where(stagger, np.floor(rng.uniform(0, 1, len(vm)) * period / step) * step, 0.0)
        g = Group(kind, vm, params, phase, spec_idx)
        if kind in ("planetlab", "bitbrains"):
            _load_series(g, specs)
        if kind == "batch":
            g.state["left"] = g.params["work"].copy()
            g.state["think_left"] = np.zeros(len(vm))
            g.state["started"] = np.zeros(len(vm))
        if kind == "httperf":
            g.state["backlog"] = np.zeros(len(vm))
        if kind == "transfer":
            g.state["sent"] = np.zeros(len(vm))
            g.state["done"] = np.zeros(len(vm), dtype=bool)
        return g

    @staticmethod
    def _phase_events(specs: tuple[WorkloadSpec, ...]) -> list[tuple[float, int, str, object]]:
        ev = [(ph.at, s, k, v) for s, spec in enumerate(specs) for ph in spec.phases for k, v in ph.params.items()]
        return sorted(ev, key=lambda e: (e[0], e[1]))

    def apply_phases(self, t: float) -> None:
        """Apply every phase change due by time t."""
        while self._next_event < len(self._events) and self._events[self._next_event][0] <= t + 1e-9:
            _, s, key, value = self._events[self._next_event]
            kind = self.scenario.workloads[s].kind
            g = self.groups.get(kind)
            if g is not None:
                g.params[key][g.spec_index == s] = value
            self._next_event += 1

    def group(self, kind: str) -> Group | None:
        return self.groups.get(kind)


def _trace_files(spec: WorkloadSpec, vms: int) -> list[str] | None:
    """A trace set's files for the entry's VMs, one each in name order (None: the entry names one file)."""
    file = spec.params.get("file")
    if spec.kind not in ("planetlab", "bitbrains") or not file or not is_trace_set(file):
        return None
    try:
        files = trace_set(file)
    except TraceError as exc:
        raise TraceError(f"{spec.where or 'a workload'}.file: {exc}") from None
    if len(files) < vms:
        raise TraceError(
            f"{spec.where or 'a workload'}.file: {file} holds {len(files)} trace(s) for {vms} VMs; "
            "expected one trace per VM the entry names (fewer VMs, or a larger set)"
        )
    return files[:vms]


def _load_series(g: Group, specs: tuple[WorkloadSpec, ...]) -> None:
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
    if g.kind == "planetlab":
        g.series["cpu"] = _pad(loaded)
        return
    for key in ("cpu", "mem_used", "disk_read", "disk_write", "net_rx", "net_tx"):
        g.series[key] = _pad([getattr(t, key) for t in loaded])


def _pad(arrays: list[np.ndarray]) -> np.ndarray:
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
