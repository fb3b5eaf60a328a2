"""Deficit round robin as a baseline (Shreedhar and Varghese, SIGCOMM 1995; the scheduler Pisces shares a
server with): each round, every backlogged VM may send its quantum of bytes plus what it could not send
last round, so its long-run share of a busy device is its quantum's share of the bytes. Each VM's
quantum is its throughput target in pages (a target of one request per second is worth `page` bytes a
second), so a busy device gives VMs of the same request size IOPS in proportion to their targets, and a
VM of larger requests fewer: DRR is fair in bytes. Its limit is `limit` times the upper bound of its
throughput SLO (0: none, DRR on its own being work-conserving).
"""

from __future__ import annotations

import numpy as np

from sova.model.io_sample import IoThrottle
from sova.model.schema import Field
from sova.plan.base import register
from sova.plan.storage.io_control import IoController
from sova.plan.storage.mclock import TAG_PARAMS, tag_limit


@register
class DeficitRoundRobin(IoController):
    name = "drr"
    summary = "deficit round robin: the storage server shares bytes by quanta in proportion to the targets"
    schema = {**TAG_PARAMS, "page": Field("size", 4096.0, "bytes of quantum per IOPS of target", lo=1)}

    def step(self, now, span, throughput, latency) -> IoThrottle:
        target = self.targets()
        limit = tag_limit(self.settings["limit"], self.high, target)
        quantum = target * self.settings["page"]
        return IoThrottle(self.vms, limit, np.zeros(len(self.vms)), weight=quantum, weight_on_bytes=True)
