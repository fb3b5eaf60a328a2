"""The stretch of a run its summary's energy and SLA metrics count (``[outputs] measure_from`` and
``measure_to``): the simulator's cumulative counters are taken when the run reaches each end, and the
summary reads their difference. CloudSim 3.0.3, for one, counts from its first update (300.1 s) to its
last (86100.1 s of a day), so its energy leaves out the run's first and last five minutes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sova.sim.engine import Simulator

_TOTALS = ("energy_j", "host_active_s", "host_short_s", "vm_cpu_asked", "vm_migration_loss")


def _totals(sim: Simulator) -> dict[str, np.ndarray]:
    return {name: getattr(sim.sensors, name).copy() for name in _TOTALS}


@dataclass
class MeasureWindow:
    start: float
    end: float  # 0: the run's end
    at_start: dict[str, np.ndarray] | None = None
    at_end: dict[str, np.ndarray] | None = None

    def observe(self, sim: Simulator) -> None:
        """Take the counters when the run reaches an end of the window (call once a step, and at t = 0)."""
        if self.at_start is None and sim.t >= self.start - 1e-9:
            self.at_start = _totals(sim)
        if self.end > 0 and self.at_end is None and sim.t >= self.end - 1e-9:
            self.at_end = _totals(sim)

    def totals(self, sim: Simulator) -> dict[str, np.ndarray]:
        """Each counter's growth over the window (the run's end where the window outlasts it)."""
        end = self.at_end if self.at_end is not None else _totals(sim)
        if self.at_start is None:  # the run ended before the window began
            return {name: np.zeros_like(value) for name, value in end.items()}
        return {name: end[name] - self.at_start[name] for name in _TOTALS}
