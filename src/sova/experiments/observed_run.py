"""A scenario run with no policy, observed as a real host's monitor would see it: what `sova place`,
`sova predict` and the trials measure their window on."""

from __future__ import annotations

from collections.abc import Callable

from sova.drivers.sim import SimDriver
from sova.model.knowledge import Knowledge
from sova.model.scenario import Scenario
from sova.sim.engine import Simulator


def observe_run(
    scenario: Scenario, seconds: float, warmup: float = 0.0, on_step: Callable[[Simulator], None] | None = None
) -> tuple[Simulator, Knowledge]:
    """Run the scenario for `seconds` with no policy; the Knowledge holds the hosts' reports at `warmup`
    and at the end (a window's two ends: all that rates over it need). `on_step` sees the simulator
    after every step from the warm-up on."""
    sim = Simulator(scenario)
    driver = SimDriver(sim)
    knowledge = Knowledge(float("inf"), scenario.topology)
    first = round(warmup / scenario.tick)
    for i in range(max(1, round(seconds / scenario.tick))):
        if i == first:
            knowledge.add(driver.observe())
        sim.step()
        if on_step is not None and i >= first:
            on_step(sim)
    knowledge.add(driver.observe())
    return sim, knowledge
