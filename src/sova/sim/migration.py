"""Pre-copy live migration, advanced through time at whatever bandwidth the fabric gives it.

Round 0 sends all memory M; round i+1 sends what was dirtied during round i, min(D * T_i, W). The
stop-and-copy round n is the first whose volume fits ``downtime_limit`` at the current bandwidth
(QEMU's rule), or round ``max_rounds``, or the one that would push the total past ``max_factor * M``
(Xen's rule). The VM is paused during round n and ``resume_time``; that is the downtime.
``closed_form`` gives the same quantities for a constant bandwidth (models-and-formulas.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class Migration:
    """One migration in flight; bytes and seconds, bandwidth in bytes/s."""

    vm: int
    src: int
    dst: int
    memory: float
    dirty_rate: float
    wss: float
    started: float
    downtime_limit: float = 0.3
    max_rounds: int = 30
    max_factor: float = 3.0
    resume_time: float = 0.02
    round: int = 0
    round_left: float = -1.0
    round_elapsed: float = 0.0
    sent: float = 0.0
    phase: str = "precopy"  # precopy | stopcopy | resume | done
    downtime: float = 0.0
    resume_left: float = 0.0
    elapsed: float = 0.0

    def __post_init__(self) -> None:
        if self.round_left < 0:
            self.round_left = self.memory

    @property
    def done(self) -> bool:
        return self.phase == "done"

    last_bandwidth: float = 0.0

    @property
    def paused(self) -> bool:
        return self.phase in ("stopcopy", "resume")

    def pause_left(self) -> float:
        """Seconds the VM stays paused from now, at the last bandwidth (0 while pre-copy runs)."""
        if self.phase == "resume":
            return self.resume_left
        if self.phase == "stopcopy":
            copy = self.round_left / self.last_bandwidth if self.last_bandwidth > 0 else float("inf")
            return copy + self.resume_time
        return 0.0

    def advance(self, bandwidth: float, dt: float) -> tuple[float, float]:
        """Advance by dt at this bandwidth; returns (bytes sent, seconds the VM was paused)."""
        sent0, paused, left = self.sent, 0.0, dt
        self.last_bandwidth = bandwidth
        while left > 1e-12 and self.phase != "done":
            if self.phase == "resume":
                use = min(left, self.resume_left)
                self.resume_left -= use
                paused += use
                left -= use
                if self.resume_left <= 1e-12:
                    self.phase = "done"
                continue
            if bandwidth <= 0:
                if self.paused:
                    paused += left
                break
            need = self.round_left / bandwidth
            use = min(left, need)
            self.round_left -= use * bandwidth
            self.sent += use * bandwidth
            self.round_elapsed += use
            if self.paused:
                paused += use
            left -= use
            if use >= need - 1e-12:
                self._end_round(bandwidth)
        self.elapsed += dt - max(left, 0.0) if self.phase == "done" else dt
        return self.sent - sent0, paused

    def _end_round(self, bandwidth: float) -> None:
        if self.phase == "stopcopy":
            self.downtime = self.round_elapsed + self.resume_time
            self.phase = "resume"
            self.resume_left = self.resume_time
            return
        cap = self.wss if self.wss > 0 else self.memory
        nxt = min(self.dirty_rate * self.round_elapsed, cap)
        self.round += 1
        self.round_left = nxt
        self.round_elapsed = 0.0
        threshold = bandwidth * self.downtime_limit
        if nxt <= threshold or self.round >= self.max_rounds or self.sent + nxt > self.max_factor * self.memory:
            self.phase = "stopcopy"


@dataclass(frozen=True)
class PrecopyResult:
    rounds: int
    data: float
    downtime: float
    total_time: float


def closed_form(
    memory: float, dirty_rate: float, bandwidth: float, threshold: float, max_rounds: int, resume_time: float
) -> PrecopyResult:
    """n = min(ceil(log_l(V_th / M)), n_max), at least 1; V = M (1 - l^(n+1)) / (1 - l); downtime = M l^n / B + T_r.

    l = D / B. Round n is the stop-and-copy; the total time is V / B + T_r.
    """
    lam = dirty_rate / bandwidth
    if lam <= 0 or memory <= threshold:
        n = 1  # the first round is always live (QEMU); the formula's n = 0 would pause the VM throughout
    elif lam >= 1:
        n = max_rounds
    else:
        n = max(1, min(math.ceil(math.log(threshold / memory) / math.log(lam)), max_rounds))
    data = memory * (n + 1) if lam == 1 else memory * (1 - lam ** (n + 1)) / (1 - lam)
    return PrecopyResult(
        rounds=n,
        data=data,
        downtime=memory * lam**n / bandwidth + resume_time,
        total_time=data / bandwidth + resume_time,
    )
