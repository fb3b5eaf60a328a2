"""The SASLO paper's "Integral" baseline (Triage's adaptive control): the IO rate limit integrates the error,
r(k+1) = r(k) + g e(k). On the ideal plant (the VM gets its limit) that is one pole at 1 - g; g is
placed from the same settling time and criterion as SEE's poles (g = 1 - (c/100)^(1/S_t), 0.543 at 5
epochs and 2 %), so the two differ only in SEE's proportional term and its model. No anti-windup beyond
the limit's bounds (1 IOPS, `headroom` times the upper bound), as integral control is usually given.
"""

from __future__ import annotations

import numpy as np

from sova.model.io_sample import IoThrottle
from sova.plan.base import register
from sova.plan.storage.io_control import FEEDBACK_PARAMS, MIN_RATE, IoController


@register
class IntegralControl(IoController):
    name = "integral"
    summary = "integral control of each VM's IO rate limit toward the lower bound of its throughput SLO"
    schema = FEEDBACK_PARAMS

    def start(self, n: int) -> None:
        p = self.settings
        self.gain = 1.0 - (p["criterion"] / 100.0) ** (1.0 / p["settling"])
        self.ceiling = p["headroom"] * self.high
        self.limit = self.target.copy()

    def step(self, now, span, throughput, latency) -> IoThrottle:
        error = np.where(np.isnan(throughput), 0.0, self.target - throughput)
        self.limit = np.clip(self.limit + self.gain * error, MIN_RATE, self.ceiling)
        return IoThrottle(self.vms, self.limit.copy(), np.zeros(len(self.vms)))
