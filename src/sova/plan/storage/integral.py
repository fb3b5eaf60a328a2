"""The SASLO paper's "Integral" baseline (Triage's adaptive control): the IO rate limit integrates the error,
r(k+1) = r(k) + g e(k). On the ideal plant (the VM gets its limit) that is one pole at 1 - g; g is
placed from the same settling time and criterion as SEE's poles (g = 1 - (c/100)^(1/S_t), 0.543 at 5
epochs and 2 %), so the two differ only in SEE's proportional term and its model. No anti-windup beyond
the limit's bounds (1 IOPS, `headroom` times the upper bound), as integral control is usually given.
"""

from __future__ import annotations

import numpy as np

from sova.model.io_sample import IoThrottle
from sova.model.schema import Field
from sova.plan.base import register
from sova.plan.storage.io_control import IoController


@register
class IntegralControl(IoController):
    name = "integral"
    summary = "integral control of each VM's IO rate limit toward the lower bound of its throughput SLO"
    params = {
        "period": Field("duration", 0.025, "the control epoch", lo=0, lo_open=True),
        "settling": Field("float", 5.0, "settling time the gain is placed for, epochs", lo=0, lo_open=True),
        "criterion": Field("float", 2.0, "convergence criterion c, per cent", lo=0, lo_open=True, hi=100),
        "headroom": Field("float", 4.0, "the IO limit stays below this times the throughput upper bound", lo=1),
    }

    def start(self, n: int) -> None:
        p = self.settings
        self.gain = 1.0 - (p["criterion"] / 100.0) ** (1.0 / p["settling"])
        self.target = np.array([self.slos.slo(vm).throughput[0] for vm in self.vms])
        self.ceiling = p["headroom"] * np.array([self.slos.slo(vm).throughput[1] for vm in self.vms])
        self.limit = self.target.copy()

    def targets(self) -> np.ndarray:
        return self.target

    def step(self, now, span, throughput, latency) -> IoThrottle:
        error = np.where(np.isnan(throughput), 0.0, self.target - throughput)
        self.limit = np.clip(self.limit + self.gain * error, 1.0, self.ceiling)
        return IoThrottle(self.vms, self.limit.copy(), np.zeros(len(self.vms)))
