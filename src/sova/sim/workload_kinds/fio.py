"""fio: a stream of IOs of ``size`` bytes at ``iops`` against the VM's storage server, open loop or with
``iodepth`` IOs kept outstanding, random or sequential (``pattern``: a sequential stream skips the
device's seek, as read-ahead serves it)."""

from __future__ import annotations

from sova.sim.workload_kinds.base import IOStreams, WorkloadKind, register_kind


@register_kind
class Fio(WorkloadKind):
    name = "fio"
    order = 65
    does_io = True

    def io(self, group, sim, t, dt) -> IOStreams:
        p = group.params
        return IOStreams(group.vm, p["iops"], p["size"], p["read"], p["iodepth"], p["pattern"] == "sequential")
