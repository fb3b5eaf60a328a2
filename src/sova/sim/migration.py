"""Live migration as QEMU and libvirt do it, advanced through time at whatever bandwidth the fabric gives.

Pre-copy: round 0 sends all memory M; round i+1 sends what the guest dirtied during round i,
min(D·T_i, W) with W the writable working set. Pre-copy stops when what is left fits ``downtime_limit``
at the bandwidth just measured (QEMU's rule), then the guest pauses for the stop-and-copy round and
``resume_time``: that pause is the downtime. Options, as libvirt offers them:

- caps on rounds and on the volume sent (``max_rounds``, ``max_factor``·M; Xen's classic rules, off by
  default as in QEMU): reaching one forces the stop-and-copy, and the migration ends "not-converged";
- auto-converge: when the guest dirtied more than half of what a round sent, twice, its vCPUs are
  throttled (20 % first, then +10 % each time, at most 99 %), which slows its work and its dirtying;
- post-copy: after the first full pass the guest pauses for ``resume_time``, runs on the destination,
  and the pages still missing there are pulled in the background (the guest's page-fault stalls are not
  modelled);
- a timeout (``timeout`` s of pre-copy) that aborts the migration ("timed-out", the guest stays where it
  was), or suspends the guest for a stop-and-copy ("not-converged"), or switches to post-copy.

CloudSim 3.0.3's model (``model = "cloudsim"``, ``fixed_time``): the memory goes in a fixed time, RAM over
half the destination's NIC bandwidth (its PowerDatacenter), whatever the network carries; the guest runs
throughout. What it costs the hosts meanwhile is sim/step_moves.py's.

Every time is kept at sub-step precision. ``closed_form`` gives the same quantities at a constant
bandwidth (docs/simulator.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_EPS = 1e-12
_HIGH_DIRTY_SHARE = 0.5  # QEMU's throttle-trigger-threshold: dirtied > 50 % of what the round sent
_HIGH_ROUNDS = 2  # ... this many times before the throttle is raised


@dataclass(frozen=True)
class MigrationConfig:
    """How migrations run: the scenario's [simulator] migration_* keys."""

    downtime_limit: float = 0.3  # s, QEMU's default
    resume_time: float = 0.02  # s to resume the guest at the destination
    max_rounds: int = 0  # 0: no cap (QEMU); Xen's classic rule is 29
    max_factor: float = 0.0  # 0: no cap (QEMU); Xen's classic rule is 3
    auto_converge: bool = False
    throttle_initial: float = 0.2
    throttle_increment: float = 0.1
    throttle_max: float = 0.99
    postcopy: bool = False  # switch to post-copy after the first full pass
    timeout: float = 0.0  # s of pre-copy, 0: none (libvirt's default)
    timeout_action: str = "abort"  # abort | suspend | postcopy
    model: str = "pre-copy"  # pre-copy | cloudsim: a fixed delay, off the network (``Migration.fixed_time``)


def migration_config(params: dict) -> MigrationConfig:
    """The configuration from the simulator's parameters (the scenario's [simulator] migration_* keys)."""
    return MigrationConfig(
        **{name: params[f"migration_{name}"] for name in MigrationConfig.__dataclass_fields__ if name != "throttle_max"}
    )


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
    config: MigrationConfig = MigrationConfig()
    round: int = 0  # the round being sent; at the end, the number of live pre-copy rounds
    round_left: float = -1.0
    round_volume: float = 0.0
    round_elapsed: float = 0.0
    sent: float = 0.0
    phase: str = "precopy"  # precopy | stopcopy | switch | postcopy | resume | done
    downtime: float = 0.0
    pause_elapsed: float = 0.0
    resume_left: float = 0.0
    elapsed: float = 0.0
    throttle: float = 0.0  # share of the guest's vCPU time taken away by auto-converge
    high_rounds: int = 0
    forced: bool = False  # the stop-and-copy was forced by a cap or a timeout, not by convergence
    mode: str = "precopy"  # precopy | postcopy: how the guest got to the destination
    status: str = ""  # once done: completed | not-converged | timed-out | failed (a fault)
    last_bandwidth: float = 0.0
    wait_left: float = 0.0  # s until the destination is awake: the migration sends nothing before
    waited: float = 0.0  # s it waited for that (in elapsed, not in the pre-copy timeout)
    doomed: bool = False  # a fault (migration_failure_rate): it fails once its first pass is sent
    fixed_time: float = 0.0  # s: CloudSim's model, the memory goes in this time whatever the network gives

    def __post_init__(self) -> None:
        if self.round_left < 0:
            self.round_left = self.memory
        self.round_volume = self.round_left

    @property
    def done(self) -> bool:
        return self.phase == "done"

    @property
    def paused(self) -> bool:
        return self.phase in ("stopcopy", "switch", "resume")

    @property
    def on_destination(self) -> bool:
        """The guest runs on the destination: post-copy has switched over, or the migration completed."""
        return self.phase == "postcopy" or (self.done and self.status not in ("timed-out", "failed"))

    def pause_left(self) -> float:
        """Seconds the VM stays paused from now, at the last bandwidth (0 while it runs)."""
        if self.phase in ("resume", "switch"):
            return self.resume_left
        if self.phase == "stopcopy":
            copy = self.round_left / self.last_bandwidth if self.last_bandwidth > 0 else math.inf
            return copy + self.config.resume_time
        return 0.0

    def advance(self, bandwidth: float, dt: float) -> tuple[float, float]:
        """Advance by dt at this bandwidth; returns (bytes sent, seconds the VM was paused)."""
        sent0, paused, left = self.sent, 0.0, dt
        self.last_bandwidth = bandwidth
        while left > _EPS and not self.done:
            was_paused = self.paused  # a piece that ends a round may change the phase
            use = self._step(bandwidth, left)
            paused += use if was_paused else 0.0
            self.elapsed += use
            left -= use
        if self.phase == "precopy" and 0 < self.config.timeout <= self.elapsed - self.waited + _EPS:
            self._time_out()  # due at the end of this step: not a step late
        return self.sent - sent0, paused

    def _step(self, bandwidth: float, left: float) -> float:
        """One piece of the current phase, up to `left` s; returns the time used (at no bandwidth, the time
        passes with nothing sent: the guest keeps dirtying memory, or stays paused)."""
        if self.wait_left > 0:  # the destination is waking up: nothing is sent, the guest runs as before
            use = min(left, self.wait_left)
            self.wait_left -= use
            self.waited += use
            return use
        if self.fixed_time > 0:
            return self._fixed_step(left)
        if self.phase in ("resume", "switch"):
            use = min(left, self.resume_left)
            self.resume_left -= use
            self.pause_elapsed += use
            if self.resume_left <= _EPS:
                self._resumed()
            return use
        if self.phase == "precopy" and self.config.timeout > 0:
            until_timeout = self.config.timeout - (self.elapsed - self.waited)
            if until_timeout <= _EPS:
                self._time_out()
                return 0.0
            left = min(left, until_timeout)
        if bandwidth <= 0:
            self.round_elapsed += left
            if self.paused:
                self.pause_elapsed += left
            return left
        use = min(left, self.round_left / bandwidth)
        self.round_left -= use * bandwidth
        self.sent += use * bandwidth
        self.round_elapsed += use
        if self.paused:
            self.pause_elapsed += use
        if self.round_left <= _EPS * max(1.0, self.memory):
            self._end_round(bandwidth)
        return use

    def _fixed_step(self, left: float) -> float:
        """CloudSim's model: the memory at an even pace over ``fixed_time``, the guest running throughout;
        no round, no pause, no dirtying."""
        pace = self.memory / self.fixed_time
        use = min(left, self.round_left / pace)
        self.round_left -= use * pace
        self.sent += use * pace
        if self.round_left <= _EPS * max(1.0, self.memory):
            self.phase, self.status = "done", "failed" if self.doomed else "completed"
        return use

    def _end_round(self, bandwidth: float) -> None:
        if self.phase == "stopcopy":
            self._start_resume("resume")
            return
        if self.phase == "postcopy":
            self.phase, self.status = "done", "completed"
            return
        if self.doomed:  # the fault: the connection drops once the first pass is sent; the guest runs on
            self.phase, self.status = "done", "failed"
            return
        dirtied = self._dirtied()
        self._auto_converge(dirtied)
        self.round += 1
        self.round_left = self.round_volume = dirtied
        self.round_elapsed = 0.0
        cfg = self.config
        if cfg.postcopy and self.round == 1 and dirtied > bandwidth * cfg.downtime_limit:
            self._switch_to_postcopy()
        elif dirtied <= bandwidth * cfg.downtime_limit:
            self.phase = "stopcopy"
        elif (cfg.max_rounds and self.round >= cfg.max_rounds) or (
            cfg.max_factor and self.sent + dirtied > cfg.max_factor * self.memory
        ):
            self.phase, self.forced = "stopcopy", True

    def _dirtied(self) -> float:
        """What the guest dirtied during the round so far: min(D·T, W) at its current throttle."""
        cap = self.wss if self.wss > 0 else self.memory
        return min(self.dirty_rate * (1.0 - self.throttle) * self.round_elapsed, cap)

    def _auto_converge(self, dirtied: float) -> None:
        cfg = self.config
        if not cfg.auto_converge or dirtied <= _HIGH_DIRTY_SHARE * self.round_volume:
            return
        self.high_rounds += 1
        if self.high_rounds >= _HIGH_ROUNDS:
            self.high_rounds = 0
            raised = cfg.throttle_initial if self.throttle == 0 else self.throttle + cfg.throttle_increment
            self.throttle = min(raised, cfg.throttle_max)

    def _time_out(self) -> None:
        action = self.config.timeout_action
        if action == "abort":
            self.phase, self.status = "done", "timed-out"
        elif action == "postcopy":
            self.round_left += self._dirtied()
            self._switch_to_postcopy()
        else:  # suspend: the guest pauses, and everything still dirty goes in one stop-and-copy
            self.round_left += self._dirtied()
            self.round_elapsed = 0.0
            self.phase, self.forced = "stopcopy", True

    def _switch_to_postcopy(self) -> None:
        self.mode = "postcopy"
        self.throttle = 0.0
        self._start_resume("switch")

    def _start_resume(self, phase: str) -> None:
        self.phase = phase
        self.resume_left = self.config.resume_time

    def _resumed(self) -> None:
        self.downtime = self.pause_elapsed
        if self.phase == "switch":  # the guest runs on the destination; the rest is pulled from the source
            self.phase = "postcopy" if self.round_left > _EPS else "done"
            self.status = "" if self.phase == "postcopy" else "completed"
            return
        self.phase = "done"
        self.status = "not-converged" if self.forced else "completed"


@dataclass(frozen=True)
class PrecopyResult:
    rounds: int
    data: float
    downtime: float
    total_time: float


def closed_form(
    memory: float,
    dirty_rate: float,
    bandwidth: float,
    threshold: float,
    max_rounds: int = 0,
    resume_time: float = 0.0,
    wss: float = 0.0,
) -> PrecopyResult:
    """Pre-copy at a constant bandwidth B, λ = D/B, with QEMU's stop rule and an optional round cap.

    Round 0 sends M; round 1 a = min(λM, W); round i ≥ 1 sends a·ρ^(i-1) with ρ = min(λ, 1) (with λ ≥ 1
    every round is the working set W). Round n, the stop-and-copy, is the first with a·ρ^(n-1) ≤ V_th
    (at least 1: the first round is always live): n = 1 + ceil(log_λ(V_th / a)), or the cap; with λ ≥ 1
    and no cap it never comes (infinite). Data V = M + a(1 - λ^n)/(1 - λ) (a·n when ρ = 1); downtime
    a·ρ^(n-1)/B + T_r; time V/B + T_r.
    """
    lam = dirty_rate / bandwidth
    rho = min(lam, 1.0)
    first = min(lam * memory, wss if wss > 0 else memory)
    if first <= threshold:
        n = 1
    elif rho == 1.0:
        n = max_rounds or math.inf
    else:
        n = 1 + math.ceil(math.log(threshold / first) / math.log(lam))
        n = min(n, max_rounds) if max_rounds else n
    if math.isinf(n):
        return PrecopyResult(rounds=n, data=math.inf, downtime=math.inf, total_time=math.inf)
    data = memory + (first * n if rho == 1.0 else first * (1 - lam**n) / (1 - lam))
    last = first * rho ** (n - 1)
    return PrecopyResult(
        rounds=n, data=data, downtime=last / bandwidth + resume_time, total_time=data / bandwidth + resume_time
    )
