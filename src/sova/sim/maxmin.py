"""Max-min fair sharing of capacitated resources among flows with demands (water-filling).

Resource r has capacity c_r; flow f uses a_rf units of resource r per unit of its rate (a link:
1 per bit; a Dom0 CPU: seconds of CPU per bit). All unfrozen flows rise together; a flow freezes
when it reaches its demand or when a resource it uses saturates.

Vectorized over a sparse incidence matrix, and parallel: a resource's saturation level
t_r = (c_r - frozen load) / (sum of its active coefficients) can only rise as other flows freeze, so
in one round we freeze (1) every flow whose demand is below the lowest level on its path and
otherwise (2) every resource whose level is the lowest along all of its flows' paths. The number of
rounds is the depth of the bottleneck dependency, not the number of flows or levels.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix

_REL = 1e-9


def _segment_min(starts: np.ndarray, nonempty: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Minimum of values[indptr[i]:indptr[i+1]] per row (starts: indptr[:-1] of the nonempty rows); inf
    for empty rows."""
    out = np.full(len(nonempty), np.inf)
    if values.size:
        out[nonempty] = np.minimum.reduceat(values, starts)
    return out


def _row_starts(indptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    nonempty = np.diff(indptr) > 0
    return indptr[:-1][nonempty], nonempty


def max_min_fair(
    a: csr_matrix,
    capacity: np.ndarray,
    demand: np.ndarray,
    at: csr_matrix | None = None,
    weight: np.ndarray | None = None,
) -> np.ndarray:
    """Rates of (weighted) max-min fair sharing.

    a: resources x flows (CSR), nonnegative coefficients; capacity: per resource; demand: per flow
    (may be inf). at: the transpose of a in CSR form, if the caller keeps one. weight: per flow; unfrozen
    flows rise in proportion to it (default 1), which is weighted max-min fairness.
    """
    n_flows = a.shape[1]
    x = np.zeros(n_flows)
    if n_flows == 0:
        return x
    if at is None:
        at = a.T.tocsr()
    demand = np.asarray(demand, dtype=float)
    w = np.ones(n_flows) if weight is None else np.asarray(weight, dtype=float)
    level_demand = demand / w  # the common level at which a flow reaches its demand
    cap = np.asarray(capacity, dtype=float)
    active = demand > 0
    uses = np.diff(at.indptr) > 0
    unbounded = active & ~uses & ~np.isfinite(demand)
    if unbounded.any():
        raise ValueError(f"{int(unbounded.sum())} flow(s) have unlimited demand and use no resource")
    free = active & ~uses
    x[free] = demand[free]
    active &= uses
    fixed_load = np.zeros(len(cap))
    flow_rows, resource_rows = _row_starts(at.indptr), _row_starts(a.indptr)
    while active.any():
        slope = a @ np.where(active, w, 0.0)
        room = np.maximum(cap - fixed_load, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            level = np.where(slope > 0, room / slope, np.inf)
        # lowest saturation level on each flow's path
        lowest = _segment_min(*flow_rows, level[at.indices])
        done = active & (level_demand <= lowest * (1 + _REL))
        if done.any():
            x[done] = demand[done]
        else:
            # a resource is final when no flow through it sees a lower level elsewhere
            seen = np.where(active, lowest, np.inf)
            row_min = _segment_min(*resource_rows, seen[a.indices])
            final = (slope > 0) & (row_min >= level * (1 - _REL))
            done = active & ((at @ final.astype(float)) > 0)
            x[done] = w[done] * lowest[done]
        fixed_load += a @ np.where(done, x, 0.0)
        active &= ~done
    return x
