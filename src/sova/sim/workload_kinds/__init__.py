"""Workload kinds, one module each, all following the protocol in ``base``.

Adding a kind means adding a module here with a ``@register_kind`` subclass of ``WorkloadKind``, and its
parameters in ``model/workload_params.WORKLOAD_PARAMS`` (the scenario reader validates and documents them
there, a floor below the simulator).
"""

from __future__ import annotations

from sova.model.plugins import import_modules
from sova.sim.workload_kinds.base import _KINDS, WorkloadKind


def kinds() -> dict[str, WorkloadKind]:
    """Every kind by name, in step order; each module of this package is imported on first use."""
    import_modules(__name__)
    return dict(sorted(_KINDS.items(), key=lambda item: (item[1].order, item[0])))
