"""A leaky bucket per VM as a baseline (Turner's leaky bucket as a meter; QEMU's own throttle is one, with
a burst): credit fills at the VM's throughput target, up to `burst` seconds of it, and requests take it.
A VM that gets less than its target for a while (held back by the device, or asking less) saves credit
and spends it when it can, so its mean comes nearer its target than a fixed rate's, at the cost of
bursts above it. With no burst it is the
fixed rate (`static-throttle`).

The credit is counted on completed requests (what the counters show), each epoch: the VM may use its
credit plus the epoch's fill.
"""

from __future__ import annotations

import numpy as np

from sova.model.io_sample import IoThrottle
from sova.model.schema import Field
from sova.plan.base import register
from sova.plan.storage.io_control import MIN_RATE, IoController


@register
class LeakyBucket(IoController):
    name = "leaky-bucket"
    summary = "a leaky bucket per VM: its IO rate limit is its target plus the credit it saved, up to a burst"
    schema = {
        "period": Field("duration", 0.025, "the control epoch", lo=0, lo_open=True),
        "burst": Field("duration", 1.0, "the bucket's depth, in seconds of the target", lo=0),
    }

    def start(self, n: int) -> None:
        self.credit = np.zeros(n)  # requests each VM may send beyond its target's rate

    def step(self, now, span, throughput, latency) -> IoThrottle:
        target = self.targets()
        used = np.where(np.isnan(throughput), target, throughput) * span
        depth = self.settings["burst"] * target
        self.credit = np.clip(self.credit + target * span - used, 0.0, depth)
        limit = np.maximum(target + self.credit / self.settings["period"], MIN_RATE)
        return IoThrottle(self.vms, limit, np.zeros(len(self.vms)))
