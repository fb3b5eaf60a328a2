"""SASLO's SLO enforcement engine (SEE) with its optimizer (AOT), as one IO controller per host: every
25 ms epoch, per VM under SLO, the PI controller moves the VM's IO rate limit (Eq. 5-13) and the IO split
controller its request-merge limit; every T_R the throughput targets of the VMs on each storage server
are coordinated (Algorithm 1) and every T_S their IO size limits (Algorithm 2), from the SC rates and PF
ratios of their per-second throughput over the last T_R.

The limit moves by the PI output each epoch, r(k+1) = r(k) + u(k) (u is "the variation in r(k)"), kept
between 1 IOPS and `headroom` times the VM's throughput upper bound. Anti-windup, which the paper does
not describe: while the limit is held at a bound, or a VM got less than `binding` (0.9) of its limit (the
device or the workload, not the limit, held it back), the integral does not grow, the limit is not raised
and the epoch is not used to fit the model. So a target the device cannot give for a while does not
wind the controller up, and the fit learns only how the VM follows its limit.

A VM with a latency SLO also gets Façade's control of its requests in flight (the paper's §5.2.3): every
second, the cap that Little's law says gives its target latency at the throughput it got.
"""

from __future__ import annotations

import numpy as np

from sova.model.actions import SetIoTarget
from sova.model.io_sample import IoThrottle
from sova.model.schema import Field
from sova.plan.base import register
from sova.plan.storage import io_split, pi_controller
from sova.plan.storage.coordination import coordinate, throughput_step
from sova.plan.storage.io_control import FEEDBACK_PARAMS, MIN_RATE, IoController, window_status

SIZE_STEP = 4096.0  # Δ_S: a memory page


@register
class SloEnforcement(IoController):
    name = "see"
    priority = 60  # its pin (off by default) binds the migration policies (50) but not the rules' keeper (100)
    summary = "SASLO: a PI controller per VM holds its IO throughput to its target; AOT coordinates the targets"
    schema = {
        **FEEDBACK_PARAMS,
        "overshoot": Field("float", 0.1, "maximum overshoot M_o the gains are placed for", lo=0, lo_open=True, hi=1),
        "split_latency_rise": Field("float", 0.3, "latency rise over two epochs that splits requests", lo=0),
        "optimize": Field("bool", True, "run the AOT (Algorithms 1 and 2); off: targets stay at their lower bounds"),
        "t_r": Field("duration", 30.0, "T_R: throughput target coordination period", lo=1),
        "t_s": Field("duration", 300.0, "T_S: IO size limit coordination period", lo=1),
        "max_in_flight": Field(
            "int", 1024, "the most requests Façade lets a VM with a latency SLO keep in flight", lo=1
        ),
        "pin": Field("bool", False, "keep the VMs under SLO control where they run: a live migration stalls their IO"),
        "binding": Field(
            "float",
            0.9,
            "a VM that got at least this share of its limit was held back by it (else: anti-windup)",
            lo=0,
            lo_open=True,
            hi=1,
        ),
    }

    def pinned(self, knowledge) -> dict[str, str]:
        """Extension point (with ``pin``): the VMs whose storage SLO this controller holds stay put."""
        if not self.settings.get("pin"):
            return {}
        return {vm: "its storage SLO is held where it runs" for vm in self.vms}

    def start(self, n: int) -> None:
        p = self.settings
        self.design = pi_controller.PiDesign(p["settling"], p["overshoot"], p["criterion"])
        self._read_ranges()
        self.size_target = self.size_low.copy()  # Algorithms 1 and 2 start from the lower bounds
        self.limit = self.target.copy()
        self.pi = pi_controller.PiState.fresh(n, *self.design.poles())
        self.split = io_split.SplitState.fresh(self.size_target)
        self.server = np.array([self.server_of.get(vm, "") for vm in self.vms])
        self.in_flight = self._first_in_flight()

    def took_up(self, moved: np.ndarray) -> None:
        """A VM whose SLO changed starts again from its new lower bounds with no integral; the others keep
        their limits, sizes and caps within their ranges."""
        self._read_ranges()
        self.size_target = np.where(moved, self.size_low, np.clip(self.size_target, self.size_low, self.size_high))
        self.split.limit = np.where(moved, self.size_target, np.minimum(self.split.limit, self.size_target))
        self.limit = np.where(moved, self.target, np.clip(self.limit, MIN_RATE, self.ceiling))
        self.pi.integral = np.where(moved, 0.0, self.pi.integral)
        self.in_flight = np.where(moved | ~self.has_latency, self._first_in_flight(), self.in_flight)

    def _read_ranges(self) -> None:
        """The tenants' ranges of IO size, SC rate and PF ratio, the limit's ceiling, who has a latency SLO."""
        slos = [self.slos.slo(vm) for vm in self.vms]
        sizes = [s.io_size or (0.0, 0.0) for s in slos]
        self.size_low, self.size_high = np.array([s[0] for s in sizes]), np.array([s[1] for s in sizes])
        self.sc_range = (np.array([s.sc_rate[0] for s in slos]), np.array([s.sc_rate[1] for s in slos]))
        self.pf_range = (np.array([s.pf_ratio[0] for s in slos]), np.array([s.pf_ratio[1] for s in slos]))
        self.ceiling = self.settings["headroom"] * self.high
        self.has_latency = ~np.isnan(self.latency_target)

    def _first_in_flight(self) -> np.ndarray:
        """Façade's first cap: what Little's law gives at the target and its latency (0: no latency SLO)."""
        start = np.maximum(self.target * np.nan_to_num(self.latency_target), 1.0)
        return np.where(self.has_latency, np.minimum(start, self.settings["max_in_flight"]), 0.0)

    def step(self, now, span, throughput, latency) -> IoThrottle:
        before = self.pi.integral.copy()
        # the limit held the VM back in the epoch just measured if it got (nearly) all of it
        active = throughput >= self.settings["binding"] * self.limit
        change = pi_controller.step(self.pi, throughput, self.target, self.design, active)
        wanted = self.limit + change
        self.limit = np.clip(wanted, MIN_RATE, self.ceiling)
        held = wanted != self.limit
        self.pi.integral = np.where(held, before, self.pi.integral)  # no wind-up against a bound
        sized = self.size_target > 0
        size = np.zeros(len(self.vms))
        if sized.any():  # the IO split controller, for the VMs with an IO size limit
            size = io_split.step(
                self.split,
                latency,
                throughput,
                self.target,
                self.pi.integral,
                self.size_low,
                self.size_target,
                self.settings["split_latency_rise"],
            )
        in_flight = self.in_flight.copy() if self.has_latency.any() else None
        return IoThrottle(self.vms, self.limit.copy(), np.where(sized, size, 0.0), in_flight=in_flight)

    def size_limits(self) -> np.ndarray:
        return self.size_target

    def each_second(self, now: float) -> None:
        if self.has_latency.any():
            self._facade()
        p = self.settings
        t_r, t_s = round(p["t_r"]), round(p["t_s"])
        if self.seconds_done % t_r:
            return
        sc, pf = window_status(self.seconds, self.target, t_r)
        for i, vm in enumerate(self.vms):
            self.slos.record_status(vm, float(sc[i]), float(pf[i]))
        if not p["optimize"]:
            return
        self._coordinate(now, sc, pf, self.target, self.low, self.high, throughput_step(self.low, self.high))
        if self.seconds_done % t_s == 0:
            self._coordinate(
                now, sc, pf, self.size_target, self.size_low, self.size_high, np.full(len(self.vms), SIZE_STEP)
            )

    def _facade(self) -> None:
        """Façade's queue length, every second: by Little's law (Eq. 14) a VM that completes X requests a
        second with N in flight waits N / X, so N = X * latency target holds its latency at the target at
        its throughput; X is the last second's (a VM that did nothing keeps its N)."""
        iops = self.seconds[-1] if self.seconds else np.full(len(self.vms), np.nan)
        known = self.has_latency & (np.nan_to_num(iops) > 0)
        wanted = np.clip(np.nan_to_num(iops) * np.nan_to_num(self.latency_target), 1.0, self.settings["max_in_flight"])
        self.in_flight = np.where(known, wanted, self.in_flight)

    def _coordinate(self, now, sc, pf, setting, low, high, step) -> None:
        """Algorithm 1 or 2 on each storage server's VMs, in place on `setting`; audit what moved."""
        sizes = setting is self.size_target
        for server in np.unique(self.server):
            on = np.flatnonzero((self.server == server) & ~self.ramped & ((high > 0) if sizes else True))
            if not len(on):
                continue
            sc_range = (self.sc_range[0][on], self.sc_range[1][on])
            pf_range = (self.pf_range[0][on], self.pf_range[1][on])
            out = coordinate(setting[on], low[on], high[on], step[on], sc[on], sc_range, pf[on], pf_range)
            setting[on] = out.setting
            what = "IO size limit" if sizes else "throughput target"
            for j in np.flatnonzero(out.moved):
                i = on[j]
                why = f"{what} {'raised' if out.moved[j] > 0 else 'lowered'}: SC {sc[i]:.1f} %, PF {pf[i]:.1f} %"
                self.events.append(self._target_action(i, why))
            if out.warning:
                why = f"storage server {server!r}: a VM misses its QoS and no {what} can be lowered"
                self.events.append(self._target_action(int(on[np.argmin(sc[on])]), why))
            if sizes:  # the merge limit follows a raised IO size limit, and stays under a lowered one
                raised = out.moved > 0
                self.split.limit[on] = np.where(raised, setting[on], np.minimum(self.split.limit[on], setting[on]))

    def _target_action(self, i: int, why: str) -> SetIoTarget:
        return SetIoTarget(self.vms[i], float(self.target[i]), float(self.size_target[i]), reason=why, policy=self.name)
