"""The workloads of a scenario: each entry's VMs as rows of its kind's group, with phase changes applied
on time. What each kind does in a step is its module in ``sim/workload_kinds``.
"""

from __future__ import annotations

import numpy as np

from sova.model.name_match import NameMatcher
from sova.model.scenario import Scenario, WorkloadSpec, peer_name
from sova.sim.workload_kinds import kinds
from sova.sim.workload_kinds.base import Group, WorkloadKind

_ENDPOINT_EXTERNAL = -1


class Workloads:
    """All workloads of a scenario, grouped by kind, with phase changes applied on time."""

    def __init__(self, scenario: Scenario, rng: np.random.Generator):
        self.scenario = scenario
        self.kinds: dict[str, WorkloadKind] = kinds()
        vm_index = scenario.vm_index()
        names = [v.name for v in scenario.vms]
        matching = NameMatcher(names)
        self.memory_used = np.zeros(len(names))  # MiB the workloads of each VM say they keep in use
        rows: dict[str, list[tuple[int, int, dict]]] = {}
        for s, spec in enumerate(scenario.workloads):
            names_here = matching(spec.vm)
            own = self.kinds[spec.kind].split_entry(spec, names_here)
            for k, name in enumerate(names_here):
                self.memory_used[vm_index[name]] += spec.memory_used
                params = {k: peer_name(v, name) if k in ("peer", "client") else v for k, v in spec.params.items()}
                if own is not None:
                    params.update(own[k])
                rows.setdefault(spec.kind, []).append((s, vm_index[name], params))
        self.groups: dict[str, Group] = {}
        for kind, items in rows.items():  # in the order the scenario names them: the seed's draws stay put
            self.groups[kind] = self._make_group(kind, items, scenario.workloads, vm_index, rng, scenario.step)
        self.groups = {kind: self.groups[kind] for kind in self.kinds if kind in self.groups}  # step order
        for kind, group in self.groups.items():
            self.kinds[kind].prepare(group, scenario.workloads, scenario.step)
        self._events = self._phase_events(scenario.workloads)
        self._next_event = 0

    @staticmethod
    def _make_group(kind, items, specs: tuple[WorkloadSpec, ...], vm_index, rng, step: float) -> Group:
        spec_idx = np.array([s for s, _, _ in items])
        vm = np.array([v for _, v, _ in items], dtype=np.int64)
        keys = items[0][2].keys()
        params = {}
        for k in keys:
            vals = [p[k] for _, _, p in items]
            if k in ("peer", "client"):
                params[k] = np.array([_ENDPOINT_EXTERNAL if x == "external" else vm_index[x] for x in vals])
            elif isinstance(vals[0], str):
                params[k] = np.array(vals, dtype=object)
            else:
                params[k] = np.array(vals, dtype=float)
        stagger = np.array([specs[s].stagger for s in spec_idx])
        period = params.get("period", np.ones(len(vm)))
        # a random start on a whole step of the period, as a scripted benchmark starts on a whole second
        phase = np.where(stagger, np.floor(rng.uniform(0, 1, len(vm)) * period / step) * step, 0.0)
        return Group(kind, vm, params, phase, spec_idx)

    @staticmethod
    def _phase_events(specs: tuple[WorkloadSpec, ...]) -> list[tuple[float, int, str, object]]:
        ev = [(ph.at, s, k, v) for s, spec in enumerate(specs) for ph in spec.phases for k, v in ph.params.items()]
        return sorted(ev, key=lambda e: (e[0], e[1]))

    def apply_phases(self, t: float) -> None:
        """Apply every phase change due by time t."""
        while self._next_event < len(self._events) and self._events[self._next_event][0] <= t + 1e-9:
            _, s, key, value = self._events[self._next_event]
            kind = self.scenario.workloads[s].kind
            g = self.groups.get(kind)
            if g is not None:
                g.params[key][g.spec_index == s] = value
            self._next_event += 1

    def group(self, kind: str) -> Group | None:
        return self.groups.get(kind)

    def active(self) -> list[tuple[WorkloadKind, Group]]:
        """Each kind the scenario uses, with its group, in step order."""
        return [(self.kinds[kind], g) for kind, g in self.groups.items()]
