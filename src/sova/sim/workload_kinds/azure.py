"""azure: replay of the Azure Public Dataset V1 (vmtable and CPU readings), VM lifetimes included."""

from __future__ import annotations

from sova.sim.lifetime_traces import read_azure
from sova.sim.workload_kinds.base import register_kind
from sova.sim.workload_kinds.lifetime_replay import LifetimeReplay


@register_kind
class Azure(LifetimeReplay):
    name = "azure"
    order = 75
    read = staticmethod(read_azure)
