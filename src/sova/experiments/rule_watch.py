"""How long each placement rule of a scenario was broken in a run: VM-seconds per rule, measured at every
fabric step from where the simulator's VMs actually run (VMs that are not running count nowhere).

A must rule should read 0 unless VMs started in breach of it (placed by hand), until ``keep-rules`` moved
them; a should rule reads what the policies could not keep.
"""

from __future__ import annotations

import numpy as np

from sova.model.placement_rules import RuleBook
from sova.sim.engine import Simulator


class RuleWatch:
    def __init__(self, rules: RuleBook, sim: Simulator):
        self.rules, self.sim = rules, sim
        # bound once to every VM the run may hold: the Knowledge binds the same book to each snapshot's VMs
        self.bound = rules.bind(tuple(sim.vm_names), tuple(sim.host_names)) if rules else None
        self.vm_seconds = {rule.name: 0.0 for rule in rules.rules}
        self.first = {rule.name: None for rule in rules.rules}  # when it was first seen broken

    def observe(self, seconds: float) -> None:
        if self.bound is None:
            return
        sim = self.sim
        for broken in self.bound.violations(np.where(sim.vms.present, sim.vms.host, -1)):
            name = broken.rule.name
            self.vm_seconds[name] += seconds * len(broken.vms)
            if self.first[name] is None:
                self.first[name] = sim.t

    def summary(self) -> dict[str, dict]:
        return {
            rule.name: {
                "strength": "must" if rule.must else "should",
                "broken_vm_seconds": self.vm_seconds[rule.name],
                "first_broken": self.first[rule.name],
            }
            for rule in self.rules.rules
        }
