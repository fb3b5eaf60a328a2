"""IO controllers: local policies that also run a fast loop over their VMs' block IO (a storage SLO
engine and its baselines).

Every `epoch` the Runtime hands a controller the cumulative block counters of the VMs it controls
(``IoSample``, not a whole Snapshot) and applies the throttles it returns (``IoThrottle``) through the
driver. A throttle step is the controller's own mechanism, like a thermostat's, so it is not audited;
what a person would want to see, a changed target or a warning, the controller reports as actions (with
their reasons) that the Runtime writes to the audit log as applied. A controller learns which VMs it
controls, their SLOs and storage servers from ``bind`` before the run.

Memory stays bounded over long runs: the last RECENT seconds are kept for the slower loops, and the run's
SLO statistics are running sums.
"""

from __future__ import annotations

from abc import abstractmethod
from collections import deque

import numpy as np

from sova.analyze.findings import Findings
from sova.analyze.slo_stats import DELTA_DEFAULT, pf_ratio, sc_rate
from sova.model.actions import Action
from sova.model.io_sample import IoSample, IoThrottle
from sova.model.knowledge import Knowledge
from sova.model.schema import Field
from sova.model.storage_slo import SloBook
from sova.plan.base import CONTROLLER, Policy, controllers

MIN_RATE = 1.0  # IOPS: the lowest rate limit a controller sets (a limit of 0 would mean none)
RECENT = 300  # seconds of per-second throughput kept (T_S, the slowest of SASLO's loops)
INTERVAL = 30  # seconds per row of the per-interval statistics (SASLO's T_R, its Figs. 9-11)
INTERVAL_VMS_MAX = 64  # controllers of more VMs keep the run's statistics only, not a row per interval

# the parameters of a feedback controller on the IO rate limit (SEE's and the Integral baseline's)
FEEDBACK_PARAMS = {
    "period": Field("duration", 0.025, "the control epoch", lo=0, lo_open=True),
    "settling": Field("float", 5.0, "settling time S_t the controller is placed for, epochs", lo=0, lo_open=True),
    "criterion": Field("float", 2.0, "convergence criterion c, per cent", lo=0, lo_open=True, hi=100),
    "headroom": Field("float", 4.0, "the IO limit stays below this times the throughput upper bound", lo=1),
}


class IoController(Policy):
    """Base of IO controllers: per-second throughput samples of each controlled VM, kept for the SLO
    statistics of the run (SC rate, PF ratio, AVPE against the target of each second)."""

    loop = "local"
    kind = CONTROLLER
    vms: tuple[str, ...] = ()  # the VMs under SLO control, once bound

    def bind(self, slos: SloBook, server_of: dict[str, str]) -> None:
        """The VMs under SLO control, their SLOs, and the storage server behind each. Every VM's throughput
        target starts at the lower bound of its range (where SASLO's Algorithm 1 starts)."""
        self.slos = slos
        self.vms = tuple(slos.under_control())
        self.server_of = server_of
        slo = self._read_slos()
        self.target = self.low.copy()
        self.events: list[Action] = []  # for the audit log, each with its reason
        self._last: IoSample | None = None
        self._second_start: IoSample | None = None
        self.seconds: deque[np.ndarray] = deque(maxlen=RECENT)  # IOPS of each VM, per whole second
        self._sums = np.zeros((5, len(self.vms)))  # seconds measured, Σ IOPS, Σ IOPS², Σ target, compliant
        self.start(len(self.vms))
        self._ramps = [(i, s.ramp, s.throughput[0]) for i, s in enumerate(slo) if s.ramp is not None]
        self._levels: dict[int, dict[float, np.ndarray]] = {i: {} for i, _, _ in self._ramps}  # sums per target
        self.second_latency = np.full(len(self.vms), np.nan)  # each VM's mean latency in the last second
        self._latency_sums = np.zeros((4, len(self.vms)))  # seconds measured, Σ latency, Σ latency², compliant
        self.ramped = np.zeros(len(self.vms), dtype=bool)
        self.ramped[[i for i, _, _ in self._ramps]] = True
        self._since_change = np.full(len(self.vms), -1)  # epochs since the target changed, -1: complied since
        self._last_targets: np.ndarray | None = None
        self._settled = np.zeros((2, len(self.vms)))  # changes settled, Σ epochs each took to comply
        self.intervals: list[dict] = []  # per VM and INTERVAL: target, throughput, SC, PF, sizes
        self.seconds_done = 0  # whole seconds measured
        self._interval_start: IoSample | None = None

    def start(self, n: int) -> None:
        """Set up per-VM state for n VMs (after bind)."""

    def refresh(self, changed: set[str]) -> bool:
        """Take up the changed SLOs of VMs already under control, the others going on as they were: a
        changed VM's target starts again from its new lower bound, every other target stays (within its
        range). False when the VMs under control are no longer the same (then bind again)."""
        if tuple(self.slos.under_control()) != self.vms:
            return False
        self._read_slos()
        moved = np.array([vm in changed for vm in self.vms], dtype=bool)
        self.target[:] = np.where(moved, self.low, np.clip(self.target, self.low, self.high))
        self.took_up(moved)
        return True

    def _read_slos(self) -> list:
        """Each VM's throughput range and latency target (seconds; NaN: none) from the book; its SLOs."""
        slo = [self.slos.slo(vm) for vm in self.vms]
        self.low = np.array([s.throughput[0] for s in slo], dtype=float)
        self.high = np.array([s.throughput[1] for s in slo], dtype=float)
        self.latency_target = np.array([s.latency or np.nan for s in slo])
        return slo

    def took_up(self, moved: np.ndarray) -> None:
        """Per-VM state to follow changed SLOs (after refresh; `moved`: the VMs whose SLO changed)."""

    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        return []  # a controller acts through its fast loop

    def control(self, sample: IoSample) -> IoThrottle | None:
        """One epoch: the throughput each VM got since the last and the throttles to set now."""
        last, self._last = self._last, sample
        targets = self.targets()
        for i, ramp, low in self._ramps:  # tenants that move their targets on a schedule
            targets[i] = ramp.target(low, sample.time)
        if self._second_start is None:
            self._second_start = self._first = self._interval_start = sample
        if last is None:  # the throttles start at once, before anything was measured
            unknown = np.full(len(self.vms), np.nan)
            return self.step(sample.time, 0.0, unknown, unknown)
        if sample.time <= last.time:
            return None
        span = sample.time - last.time
        throughput = (sample.requests - last.requests) / span
        latency = per_request(sample, last, "busy")
        self._track_settling(throughput)
        if sample.time - self._second_start.time >= 1.0 - 1e-9:
            start, self._second_start = self._second_start, sample
            self.second_latency = per_request(sample, start, "busy")
            self._add_second((sample.requests - start.requests) / (sample.time - start.time))
            self.seconds_done += 1
            if self.seconds_done % INTERVAL == 0 and len(self.vms) <= INTERVAL_VMS_MAX:
                self._record_interval(sample)
            self.each_second(sample.time)
        return self.step(sample.time, span, throughput, latency)

    def targets(self) -> np.ndarray:
        """Each VM's throughput target now (IOPS); the array itself, so a schedule can move it."""
        return self.target

    def _track_settling(self, throughput: np.ndarray) -> None:
        """Epochs from each change of a VM's target to the first epoch within ±10 % of it (the paper's
        settling measure: from the epoch the SLO was updated to its first compliance)."""
        targets = self.targets()
        waiting = self._since_change >= 0
        if not waiting.any() and self._last_targets is not None and np.array_equal(targets, self._last_targets):
            return  # no change to follow (most epochs)
        self._since_change[waiting] += 1
        complied = waiting & (np.abs(throughput - targets) <= 0.1 * targets)
        self._settled += np.stack([complied, np.where(complied, self._since_change, 0)])
        self._since_change[complied] = -1
        if self._last_targets is not None:
            self._since_change[targets != self._last_targets] = 0
        self._last_targets = targets.copy()

    @abstractmethod
    def step(self, now: float, span: float, throughput: np.ndarray, latency: np.ndarray) -> IoThrottle | None:
        """The throttles after an epoch of `span` seconds with these measurements (NaN: not measured)."""

    def size_limits(self) -> np.ndarray | None:
        """Each VM's IO size limit (bytes) as its controller set it, if it sets one (for the records)."""
        return None

    def _record_interval(self, sample: IoSample) -> None:
        """A row per VM for the INTERVAL seconds just ended: the target it had, what it got (mean, SC rate,
        PF ratio of its per-second throughput) and its requests' mean size, with the IO size limit."""
        start, self._interval_start = self._interval_start, sample
        targets = self.targets()
        recent = np.array(list(self.seconds)[-INTERVAL:]).T
        sc, pf = sc_rate(recent, targets), pf_ratio(recent, targets)
        size, latency = per_request(sample, start, "bytes"), per_request(sample, start, "busy")
        limits = self.size_limits()
        for i, vm in enumerate(self.vms):
            row = {"time": round(sample.time, 3), "vm": vm, "target": float(targets[i])}
            row["throughput"] = float(np.nanmean(recent[i])) if np.isfinite(recent[i]).any() else None
            row["sc_rate"] = float(sc[i]) if np.isfinite(sc[i]) else None
            row["pf_ratio"] = float(pf[i]) if np.isfinite(pf[i]) else None
            row["io_size"] = float(size[i]) if np.isfinite(size[i]) else None
            row["latency"] = float(latency[i]) if np.isfinite(latency[i]) else None
            row["io_size_limit"] = float(limits[i]) if limits is not None and limits[i] > 0 else None
            self.intervals.append(row)

    def each_second(self, now: float) -> None:
        """Called once a second, after the second's throughput was recorded (for slower loops)."""

    def _add_second(self, iops: np.ndarray) -> None:
        """One whole second of every VM: kept for the slower loops, and added to the run's sums."""
        self.seconds.append(iops)
        target = self.targets()
        known = ~np.isnan(iops)
        got = np.where(known, iops, 0.0)
        inside = known & (np.abs(iops - target) <= DELTA_DEFAULT / 100 * target)
        seconds = np.stack([known, got, got * got, np.where(known, target, 0.0), inside])
        self._sums += seconds
        latency, goal = self.second_latency, self.latency_target
        measured = ~np.isnan(latency) & ~np.isnan(goal)
        got = np.where(measured, latency, 0.0)
        within = measured & (got <= (1 + DELTA_DEFAULT / 100) * np.nan_to_num(goal))
        self._latency_sums += np.stack([measured, got, got * got, within])
        for i, _, _ in self._ramps:  # a tenant's schedule: each of its targets on its own too
            level = self._levels[i].setdefault(float(target[i]), np.zeros(5))
            level += seconds[:, i]

    def slo_summary(self) -> dict:
        """Per VM over the run: the SC rate of its per-second throughput (each second against the target
        it had), its PF ratio and AVPE against its mean target (Eq. 2, 3), and the means of both; for a
        VM whose tenant moves its target on a schedule, the same for each target it had (`levels`)."""
        out = {}
        size = per_request(self._last, self._first, "bytes")
        for i, vm in enumerate(self.vms):
            if not self._sums[0, i]:
                continue
            out[vm] = _statistics(self._sums[:, i])
            if np.isfinite(size[i]):
                out[vm]["io_size_mean"] = float(size[i])
            changes, epochs = self._settled[:, i]
            if changes:
                out[vm]["settling_epochs"] = float(epochs / changes)
                out[vm]["target_changes"] = int(changes)
            n, total, squares, within = self._latency_sums[:, i]
            if n:  # a latency SLO: the mean latency of each second against it (one-sided: lower is fine)
                mean, goal = total / n, self.latency_target[i]
                out[vm]["latency_mean"] = float(mean)
                out[vm]["latency_target"] = float(goal)
                out[vm]["latency_sc_rate"] = float(100.0 * within / n)
                out[vm]["latency_pf_ratio"] = float(100.0 * np.sqrt(max(squares / n - mean * mean, 0.0)) / goal)
            if i in self._levels:
                out[vm]["levels"] = [
                    {"target": target, "seconds": int(sums[0]), **_statistics(sums)}
                    for target, sums in sorted(self._levels[i].items())
                    if sums[0]
                ]
        return out


def _statistics(sums: np.ndarray) -> dict:
    """Throughput mean, target mean, SC rate, PF ratio and AVPE from one VM's per-second sums (seconds
    measured, Σ IOPS, Σ IOPS², Σ target, seconds compliant); a target of 0 has no scores."""
    n, total, squares, targets, inside = sums
    mean, target = total / n, targets / n
    out = {"throughput_mean": float(mean), "target_mean": float(target)}
    if target > 0:
        spread = np.sqrt(max(squares / n - mean * mean, 0.0))
        out["sc_rate"] = float(100.0 * inside / n)
        out["pf_ratio"] = float(100.0 * spread / target)
        out["avpe"] = float(100.0 * abs(mean - target) / target)
    return out


def per_request(later: IoSample, earlier: IoSample, counter: str) -> np.ndarray:
    """A cumulative counter's growth per request between two samples, per VM (NaN: no request): the
    mean latency ("busy") or size ("bytes") of the requests in between."""
    requests = later.requests - earlier.requests
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(requests > 0, (getattr(later, counter) - getattr(earlier, counter)) / requests, np.nan)


def bind_all(policies: list, slos: SloBook, server_of: dict[str, str]) -> list[IoController]:
    """Bind the IO controllers among a profile's policies to the SLOs; returns them."""
    bound = controllers(policies)
    for controller in bound:
        controller.bind(slos, server_of)
    return bound


def window_status(seconds: deque, targets: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """(SC rate, PF ratio) per VM over its last `window` per-second samples."""
    recent = np.array(list(seconds)[-window:]).T
    return sc_rate(recent, targets), pf_ratio(recent, targets)
