"""The baseline every hypervisor has: a fixed IO rate limit per VM at its throughput target, as QEMU's
`total_iops_sec` throttle sets it once and leaves it (the SASLO paper's RClock: one time stamp per
request at the target rate, Eq. 4, with nothing adjusting the rate)."""

from __future__ import annotations

import numpy as np

from sova.model.io_sample import IoThrottle
from sova.model.schema import Field
from sova.plan.base import register
from sova.plan.storage.io_control import MIN_RATE, IoController


@register
class StaticThrottle(IoController):
    name = "static-throttle"
    summary = "a fixed IO rate limit per VM at the lower bound of its throughput SLO (QEMU's throttle)"
    schema = {"period": Field("duration", 1.0, "how often the limits are re-applied", lo=0, lo_open=True)}

    def step(self, now, span, throughput, latency) -> IoThrottle:
        return IoThrottle(self.vms, np.maximum(self.target, MIN_RATE), np.zeros(len(self.vms)))
