"""opendc: replay of an OpenDC workload trace (Parquet, schema v4), VM lifetimes included."""

from __future__ import annotations

from sova.sim.lifetime_traces import read_opendc
from sova.sim.workload_kinds.base import register_kind
from sova.sim.workload_kinds.lifetime_replay import LifetimeReplay


@register_kind
class OpenDC(LifetimeReplay):
    name = "opendc"
    order = 76
    read = staticmethod(read_opendc)
