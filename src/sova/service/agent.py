"""`sova agent`: one per hypervisor host. Every period it observes its host and publishes the host's
report; between reports it takes the manager's actions (each id applied at most once, ``ActionAgent``)
and sends their outcomes, and runs its local loops (``LocalLoops``: VF scheduling, Dom0 tuning, the
storage SLO engine) at their own periods, holding its VMs to the SLOs the manager gives (``SloFollower``)
and sending what it measured and what its loops did.

``SimCluster`` stands in for a cluster of hosts on this machine: the simulator on the wall clock (times a
speed-up), and one agent per simulated host, all in one process and on one bus connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from sova.drivers.base import Driver
from sova.drivers.sim import SimDriver
from sova.model.scenario import Scenario
from sova.model.snapshot import Snapshot
from sova.plan.base import Policy
from sova.service.agent_actions import ActionAgent
from sova.service.bus import Bus
from sova.service.ledger import Ledger
from sova.service.local_audit import LocalAuditSender
from sova.service.local_loops import LocalLoops, own_part
from sova.service.reporting import publish_report
from sova.service.slo_relay import SloFollower, publish_status
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


class LocalSide:
    """The local loops of one or more hosts (a simulated cluster's are one), with what they need of the
    bus: the SLOs in, the SLO status and audit entries out."""

    def __init__(self, bus: Bus, loops: LocalLoops, own: str | None = None, offset: Callable[[], float] | None = None):
        """own: the one host these loops are for (None: every host of the observation, a simulated
        cluster's); offset: what to add to the loops' driver's clock to have the cluster's, which the host
        reports and the manager's own audit entries carry (None: the wall clock's lead on the driver's)."""
        self.bus, self.loops, self.own = bus, loops, own
        self.offset = offset or (lambda: time.time() - loops.driver.now())
        self.slos = SloFollower(bus)
        self.audit = LocalAuditSender(bus)

    async def each_report(self, snapshot: Snapshot) -> None:
        """At each report: SLOs that changed, the VMs now on the hosts, and what the SLO engine measured."""
        if not self.loops.controllers:
            return
        if self.own is not None:
            snapshot = own_part(snapshot, self.own)  # the VMs this agent holds, not its peers'
        slos = await self.slos.poll()
        if slos is None:
            self.loops.see(snapshot)
        else:
            self.loops.follow(slos, snapshot)
        status = self.loops.status()
        host_of = dict(zip(snapshot.vms, snapshot.vm_host, strict=True))
        for index, host in enumerate(snapshot.hosts):
            await publish_status(self.bus, host, {vm: v for vm, v in status.items() if host_of.get(vm) == index})

    def tick(self, host_of_entry) -> None:
        """One tick of the loops; what they did is queued for the manager under `host_of_entry(entry)`, its
        time on the cluster's clock."""
        entries = self.loops.tick()
        offset = self.offset() if entries else 0.0
        for entry in entries:
            self.audit.add(host_of_entry(entry), [replace(entry, time=entry.time + offset)])


async def run_host_agent(
    agent: HostAgent,
    observe: Callable[[], Snapshot],
    period: float,
    stop: asyncio.Event,
    local: LocalSide | None = None,
) -> None:
    """Report every `period` wall seconds, take actions in between and run the local loops at theirs, until
    `stop`; a bus fault costs a report or a step, never the agent (the connection comes back by itself)."""
    if not await _attach([agent], stop):
        return
    next_report = next_local = time.monotonic()
    local_period = local.loops.period if local is not None else math.inf
    while not stop.is_set():
        if time.monotonic() >= next_report:
            next_report += period * max(1, int((time.monotonic() - next_report) // period) + 1)
            try:  # the wall clock: real hosts' reports must compare across hosts (NTP keeps them in step)
                snapshot = replace(observe(), time=time.time())
                await agent.report(snapshot)
            except Exception as err:
                log.warning("report not sent: %s", err or type(err).__name__)
            else:
                await _each_report(local, snapshot)
        if local is not None and time.monotonic() >= next_local:
            next_local += local_period * max(1, int((time.monotonic() - next_local) // local_period) + 1)
            await _local_step(local, lambda entry: agent.host)
        try:
            # a long poll until the next report or local tick: an action that comes meanwhile is taken at once
            due = min(next_report, next_local if local is not None else math.inf)
            await agent.actions.step(wait=max(0.01, min(5.0, due - time.monotonic())))
        except Exception as err:
            log.warning("action step failed: %s", err or type(err).__name__)
            await _pause(stop, 0.5)


async def _attach(agents: list[HostAgent], stop: asyncio.Event, retry: float = 2.0) -> bool:
    """Attach each agent to its actions, trying again every `retry` s while it cannot (the streams are not
    there until a manager makes them, and an agent's user may not); False if `stop` came first."""
    for agent in agents:
        while not stop.is_set():
            try:
                await agent.start()
                break
            except Exception as err:
                log.warning(
                    "%s cannot read its actions yet (%s); a manager makes the bus's streams; trying again",
                    agent.host,
                    err or type(err).__name__,
                )
                await _pause(stop, retry)
    return not stop.is_set()


async def _each_report(local: LocalSide | None, snapshot: Snapshot) -> None:
    if local is not None:
        try:
            await local.each_report(snapshot)
        except Exception as err:  # the SLOs are read again at the next report
            log.warning("SLOs not followed at this report: %s", err or type(err).__name__)


async def _local_step(local: LocalSide, host_of_entry) -> None:
    """A tick of the local loops and the sending of what they did; a fault costs the tick, not the agent."""
    _tick(local, host_of_entry)
    try:
        await local.audit.send()
    except Exception as err:  # kept queued: sent at a later step
        log.warning("local audit entries not sent yet: %s", err or type(err).__name__)


def _tick(local: LocalSide, host_of_entry) -> None:
    """One tick of the local loops; a fault costs the tick, not the agent or the simulated cluster."""
    try:
        local.tick(host_of_entry)
    except Exception as err:
        log.warning("the local loops failed a tick: %r", err)


class SimCluster:
    """The simulator on the wall clock, times `speed`, behind one agent per simulated host. A crashed host's
    agent is down with it (no report, no action taken); a host in a sensor gap reports nothing, but its agent
    takes actions (a fence among them)."""

    def __init__(
        self,
        bus: Bus,
        scenario: Scenario,
        ledgers: Path,
        speed: float = 1.0,
        seed: int | None = None,
        policies: list[Policy] | None = None,
    ):
        """policies: the profile's; its local ones run over the whole simulated cluster (they decide per
        host, so one loop over all hosts acts as one per host would)."""
        self.bus, self.speed = bus, speed
        self.sim = Simulator(scenario, seed)
        self.driver = SimDriver(self.sim)
        self.period = scenario.control.monitor_period  # simulated seconds between reports
        self.agents = [
            HostAgent(bus, host, self.driver, Ledger(ledgers / f"{host}.db")) for host in self.sim.host_names
        ]
        storage_of = {vm.name: vm.storage for vm in scenario.vms if vm.storage}
        loops = LocalLoops(self.driver, policies or [], scenario.control, storage_of)
        self.local = LocalSide(bus, loops, offset=lambda: self.clock0) if loops.policies else None
        self.layout: Snapshot | None = None  # the latest observation: which host an audit entry is about
        # reports carry the wall clock times the speed-up plus the simulated time: a cluster started again
        # (a new simulator from 0 s) still reports later times than before, as real hosts would
        self.clock0 = time.time() * speed

    async def run(self, stop: asyncio.Event, max_steps: int = 100) -> None:
        """Step the simulator with the wall clock, report every period, take actions, until `stop`."""
        if not await _attach(self.agents, stop):
            return
        began = time.monotonic()
        next_report = self.sim.t
        warned = -60.0
        while not stop.is_set():
            target = self.speed * (time.monotonic() - began)
            for _ in range(max_steps):  # not all at once: actions and reports go on while it catches up
                if self.sim.t + self.sim.dt > target:
                    break
                self.sim.step()
                if self.local is not None:
                    _tick(self.local, self._host_of_entry)
            if self.local is not None:
                with contextlib.suppress(Exception):  # kept queued: sent at a later step
                    await self.local.audit.send()
            behind = target - self.sim.t
            if behind > 10 * self.speed and time.monotonic() > warned + 60:  # once a minute at most
                log.warning("the simulator is %.0f simulated s behind the wall clock x %g", behind, self.speed)
                warned = time.monotonic()
            if self.sim.t >= next_report and self.sim.step_ended:
                snapshot = self.driver.observe()
                snapshot = replace(snapshot, time=self.clock0 + snapshot.time)
                self.layout = snapshot
                reporting = self.sim.faults.reporting(self.sim.t)  # a crashed or silent host sends nothing
                try:
                    for agent in (a for a, sends in zip(self.agents, reporting, strict=True) if sends):
                        await agent.report(snapshot)
                except Exception as err:
                    log.warning("reports not sent: %s", err or type(err).__name__)
                await _each_report(self.local, snapshot)
                next_report = self.sim.t + self.period
            # a long poll until the next report is due (at most 2 s: the simulator steps between polls)
            wait = max(0.01, min(2.0, (next_report - self.sim.t) / self.speed))
            up = ~self.sim.faults.failed  # a crashed host's agent is down with it; a silent one's takes actions
            steps = [agent.actions.step(wait=wait) for agent, on in zip(self.agents, up, strict=True) if on]
            try:
                await (asyncio.gather(*steps) if steps else _pause(stop, wait))
            except Exception as err:
                log.warning("action step failed: %s", err or type(err).__name__)
                await _pause(stop, 0.5)

    def _host_of_entry(self, entry) -> str:
        """The host an audit entry is about: its target's, or the first host's when that is unknown."""
        layout = self.layout
        if layout is not None:
            if entry.target in layout.hosts:
                return entry.target
            if entry.target in layout.vms:
                return layout.hosts[layout.vm_host[layout.vms.index(entry.target)]]
        return self.sim.host_names[0]

    def close(self) -> None:
        for agent in self.agents:
            agent.actions.ledger.close()


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
