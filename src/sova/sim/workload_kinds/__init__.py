"""Workload kinds, one module each, all following the protocol in ``base``.

Adding a kind means adding a module here with a ``@register_kind`` subclass of ``WorkloadKind``, and its
parameters in ``model/workload_params.WORKLOAD_PARAMS`` (the scenario reader validates and documents them
there, a floor below the simulator).
"""

from __future__ import annotations

from sova.sim.workload_kinds.base import kinds

__all__ = ["kinds"]
