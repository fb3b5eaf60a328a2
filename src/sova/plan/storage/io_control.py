"""IO controllers: local policies that also run a fast loop over their VMs' block IO (a storage SLO
engine and its baselines).

Every `epoch` the Runtime hands a controller the cumulative block counters of the VMs it controls
(``IoSample``, not a whole Snapshot) and applies the throttles it returns (``IoThrottle``) through the
driver. A throttle step is the controller's own mechanism, like a thermostat's, so it is not audited;
what a person would want to see, a changed target or a warning, the controller reports as actions (with
their reasons) that the Runtime writes to the audit log as applied. A controller learns which VMs it controls, their SLOs and storage
servers from ``bind`` before the run.
"""

from __future__ import annotations

import numpy as np

from sova.analyze.findings import Findings
from sova.analyze.slo_stats import avpe, pf_ratio, sc_rate
from sova.model.actions import Action
from sova.model.io_sample import IoSample, IoThrottle
from sova.model.knowledge import Knowledge
from sova.model.storage_slo import SloBook
from sova.plan.base import Policy


class IoController(Policy):
    """Base of IO controllers: per-second throughput samples of each controlled VM, kept for the SLO
    statistics of the run (SC rate, PF ratio, AVPE against the target of each second)."""

    loop = "local"

    def bind(self, slos: SloBook, server_of: dict[str, str]) -> None:
        """The VMs under SLO control, their SLOs, and the storage server behind each."""
        self.slos = slos
        self.vms = tuple(slos.under_control())
        self.server_of = server_of
        self.events: list[Action] = []  # for the audit log, each with its reason
        self._last: IoSample | None = None
        self._second_start: IoSample | None = None
        self.seconds: list[np.ndarray] = []  # IOPS of each VM, per whole second
        self.second_targets: list[np.ndarray] = []
        self.start(len(self.vms))
        slo = [slos.slo(vm) for vm in self.vms]
        self._ramps = [(i, s.ramp, s.throughput[0]) for i, s in enumerate(slo) if s.ramp is not None]
        self.ramped = np.zeros(len(self.vms), dtype=bool)
        self.ramped[[i for i, _, _ in self._ramps]] = True
        self._since_change = np.full(len(self.vms), -1)  # epochs since the target changed, -1: complied since
        self._last_targets: np.ndarray | None = None
        self.settling: list[list[int]] = [[] for _ in self.vms]  # epochs to first compliance, per change

    def start(self, n: int) -> None:
        """Set up per-VM state for n VMs (after bind)."""

    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        return []  # a controller acts through its fast loop

    def control(self, sample: IoSample) -> IoThrottle | None:
        """One epoch: the throughput each VM got since the last and the throttles to set now."""
        last, self._last = self._last, sample
        targets = self.targets()
        for i, ramp, low in self._ramps:  # tenants that move their targets on a schedule
            targets[i] = ramp.target(low, sample.time)
        if self._second_start is None:
            self._second_start = sample
        if last is None:  # the throttles start at once, before anything was measured
            unknown = np.full(len(self.vms), np.nan)
            return self.step(sample.time, 0.0, unknown, unknown)
        if sample.time <= last.time:
            return None
        span = sample.time - last.time
        requests = sample.requests - last.requests
        throughput = requests / span
        with np.errstate(invalid="ignore", divide="ignore"):
            latency = np.where(requests > 0, (sample.busy - last.busy) / requests, np.nan)
        self._track_settling(throughput)
        if sample.time - self._second_start.time >= 1.0 - 1e-9:
            start, self._second_start = self._second_start, sample
            self.seconds.append((sample.requests - start.requests) / (sample.time - start.time))
            self.second_targets.append(self.targets().copy())
            self.each_second(sample.time)
        return self.step(sample.time, span, throughput, latency)

    def targets(self) -> np.ndarray:
        """Each VM's throughput target now (IOPS); the array itself, so a schedule can move it."""
        raise NotImplementedError

    def _track_settling(self, throughput: np.ndarray) -> None:
        """Epochs from each change of a VM's target to the first epoch within ±10 % of it (the paper's
        settling measure: from the epoch the SLO was updated to its first compliance)."""
        targets = self.targets()
        waiting = self._since_change >= 0
        self._since_change[waiting] += 1
        complied = waiting & (np.abs(throughput - targets) <= 0.1 * targets)
        for i in np.flatnonzero(complied):
            self.settling[i].append(int(self._since_change[i]))
        self._since_change[complied] = -1
        if self._last_targets is not None:
            self._since_change[targets != self._last_targets] = 0
        self._last_targets = targets.copy()

    def step(self, now: float, span: float, throughput: np.ndarray, latency: np.ndarray) -> IoThrottle | None:
        """The throttles after an epoch of `span` seconds with these measurements."""
        raise NotImplementedError

    def each_second(self, now: float) -> None:
        """Called once a second, after the second's throughput was recorded (for slower loops)."""

    def slo_summary(self) -> dict:
        """Per VM over the run: SC rate, PF ratio and AVPE of its per-second throughput against the
        target of each second, and the means of both."""
        if not self.seconds:
            return {}
        got = np.array(self.seconds).T  # VMs x seconds
        wanted = np.array(self.second_targets).T
        sc = sc_rate(got, wanted)  # each second against the target it had
        mean_target = wanted.mean(axis=1)
        out = {}
        for i, vm in enumerate(self.vms):
            out[vm] = {
                "throughput_mean": float(got[i].mean()),
                "target_mean": float(mean_target[i]),
                "sc_rate": float(sc[i]),
                "pf_ratio": float(pf_ratio(got[i], mean_target[i])),
                "avpe": float(avpe(got[i], mean_target[i])),
            }
            if self.settling[i]:
                out[vm]["settling_epochs"] = float(np.mean(self.settling[i]))
                out[vm]["target_changes"] = len(self.settling[i])
        return out


def window_status(seconds: list[np.ndarray], targets: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """(SC rate, PF ratio) per VM over its last `window` per-second samples."""
    recent = np.array(seconds[-window:]).T
    return sc_rate(recent, targets), pf_ratio(recent, targets)
