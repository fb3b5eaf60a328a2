"""`sova agent`: one per hypervisor host. Every period it observes its host and publishes the host's
report; between reports it takes the manager's actions (each id applied at most once, ``ActionAgent``)
and sends their outcomes.

``SimCluster`` stands in for a cluster of hosts on this machine: the simulator on the wall clock (times a
speed-up), and one agent per simulated host, all in one process and on one bus connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import replace
from pathlib import Path

from sova.drivers.base import Driver
from sova.drivers.sim import SimDriver
from sova.model.scenario import Scenario
from sova.model.snapshot import Snapshot
from sova.service.agent_actions import ActionAgent
from sova.service.bus import Bus
from sova.service.ledger import Ledger
from sova.service.reporting import publish_report
from sova.sim.engine import Simulator

log = logging.getLogger(__name__)


class HostAgent:
    """One host's side of the bus: its reports out, its actions in."""

    def __init__(self, bus: Bus, host: str, driver: Driver, ledger: Ledger, ack_wait: float = 30.0):
        self.bus, self.host = bus, host
        self.actions = ActionAgent(bus, host, driver, ledger, ack_wait)

    async def start(self) -> None:
        await self.actions.start()

    async def report(self, snapshot: Snapshot) -> None:
        await publish_report(self.bus, snapshot, self.host)


async def run_host_agent(agent: HostAgent, driver: Driver, period: float, stop: asyncio.Event) -> None:
    """Report every `period` wall seconds and take actions in between, until `stop`; a bus fault costs a
    report or a step, never the agent (the connection comes back by itself)."""
    await agent.start()
    next_report = time.monotonic()
    while not stop.is_set():
        if time.monotonic() >= next_report:
            next_report += period * max(1, int((time.monotonic() - next_report) // period) + 1)
            try:  # the wall clock: real hosts' reports must compare across hosts (NTP keeps them in step)
                await agent.report(replace(driver.observe(), time=time.time()))
            except Exception as err:
                log.warning("report not sent: %s", err or type(err).__name__)
        try:
            # a long poll until the next report: an action that comes meanwhile is taken at once
            await agent.actions.step(wait=max(0.01, min(5.0, next_report - time.monotonic())))
        except Exception as err:
            log.warning("action step failed: %s", err or type(err).__name__)
            await _pause(stop, 0.5)


class SimCluster:
    """The simulator on the wall clock, times `speed`, behind one agent per simulated host."""

    def __init__(self, bus: Bus, scenario: Scenario, ledgers: Path, speed: float = 1.0, seed: int | None = None):
        self.bus, self.speed = bus, speed
        self.sim = Simulator(scenario, seed)
        self.driver = SimDriver(self.sim)
        self.period = scenario.control.monitor_period  # simulated seconds between reports
        self.agents = [
            HostAgent(bus, host, self.driver, Ledger(ledgers / f"{host}.db")) for host in self.sim.host_names
        ]
        # reports carry the wall clock times the speed-up plus the simulated time: a cluster started again
        # (a new simulator from 0 s) still reports later times than before, as real hosts would
        self.clock0 = time.time() * speed

    async def run(self, stop: asyncio.Event, max_steps: int = 100) -> None:
        """Step the simulator with the wall clock, report every period, take actions, until `stop`."""
        for agent in self.agents:
            await agent.start()
        began = time.monotonic()
        next_report = self.sim.t
        warned = -60.0
        while not stop.is_set():
            target = self.speed * (time.monotonic() - began)
            for _ in range(max_steps):  # not all at once: actions and reports go on while it catches up
                if self.sim.t + self.sim.dt > target:
                    break
                self.sim.step()
            behind = target - self.sim.t
            if behind > 10 * self.speed and time.monotonic() > warned + 60:  # once a minute at most
                log.warning("the simulator is %.0f simulated s behind the wall clock x %g", behind, self.speed)
                warned = time.monotonic()
            if self.sim.t >= next_report and self.sim.step_ended:
                snapshot = self.driver.observe()
                snapshot = replace(snapshot, time=self.clock0 + snapshot.time)
                try:
                    for agent in self.agents:
                        await agent.report(snapshot)
                except Exception as err:
                    log.warning("reports not sent: %s", err or type(err).__name__)
                next_report = self.sim.t + self.period
            # a long poll until the next report is due (at most 2 s: the simulator steps between polls)
            wait = max(0.01, min(2.0, (next_report - self.sim.t) / self.speed))
            try:
                await asyncio.gather(*(agent.actions.step(wait=wait) for agent in self.agents))
            except Exception as err:
                log.warning("action step failed: %s", err or type(err).__name__)
                await _pause(stop, 0.5)

    def close(self) -> None:
        for agent in self.agents:
            agent.actions.ledger.close()


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
