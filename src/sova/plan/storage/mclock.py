"""mClock / dmClock as a baseline (Gulati et al., OSDI 2010; Ceph's dmclock): the storage server schedules
its VMs' requests by three tags each, a reservation, a weight and a limit. Each VM reserves its throughput
target, its weight is its target too (what the device has beyond the reservations is shared in
proportion to them), and its limit is `limit` times the upper bound of its throughput SLO (0: none).

Nothing here adjusts a tag to what the VM got: mClock holds the reservations while the device can give
them; when it cannot, every VM gets the same fraction of its reservation (sim/io_scheduler.py), where
SEE's per-VM loops leave the device's own sharing to decide who loses.
"""

from __future__ import annotations

import numpy as np

from sova.model.io_sample import IoThrottle
from sova.model.schema import Field
from sova.plan.base import register
from sova.plan.storage.io_control import IoController

TAG_PARAMS = {
    "period": Field(
        "duration", 1.0, "how often the tags are re-applied (they follow a moved target)", lo=0, lo_open=True
    ),
    "limit": Field("float", 1.0, "the limit as a multiple of the VM's throughput upper bound (0: none)", lo=0),
}


def tag_limit(factor: float, high: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The limit tag: `factor` times the SLO's upper bound, never below the target (0: no limit)."""
    return np.maximum(factor * high, target) if factor else np.zeros(len(target))


@register
class MClock(IoController):
    name = "mclock"
    summary = "mClock: the storage server schedules by reservation (the target), weight and limit tags"
    schema = TAG_PARAMS

    def step(self, now, span, throughput, latency) -> IoThrottle:
        target = self.targets()
        limit = tag_limit(self.settings["limit"], self.high, target)
        return IoThrottle(self.vms, limit, np.zeros(len(self.vms)), reservation=target.copy(), weight=target.copy())
