"""The live migrations of the simulated data center: those under way (each a ``Migration``, the model of
sim/migration.py, with the flow that carries it) and those that ended.

A subsystem of ``Simulator`` (sim/engine.py) that owns its state: the migrations under way, the memory
each holds on its destination until it ends, how many are under way from or to each host, the seconds each
VM spent migrating in the last step, and the log of those that ended. The engine starts and ends them
(``begin``, ``end``: it owns the flows and where each VM runs) and advances them once a step (``advance``).
"""

from __future__ import annotations

import numpy as np

from sova.sim.migration import Migration, MigrationConfig
from sova.sim.records import MigrationRecord
from sova.sim.step_moves import Move

_SOURCE_SHARE = 0.9  # of its CPU a VM gets on its source during a migration, in CloudSim's model


class LiveMigrations:
    def __init__(self, n_hosts: int, n_vms: int, config: MigrationConfig):
        self.config = config
        # VM -> its migration and the flow carrying it (-1: none, CloudSim's model is off the network)
        self.under_way: dict[int, tuple[Migration, int]] = {}
        self.reserved_memory = np.zeros(n_hosts)  # MiB held on each host by migrations heading to it
        self.per_host = np.zeros(n_hosts, dtype=np.int64)  # migrations from or to each host, under way
        self.migrating_s = np.zeros(n_vms)  # seconds of the last step each VM was migrating (for PDM)
        self.moves: list[Move] = []  # CloudSim's model: the migrations of the last step, for step_moves
        self.log: list[MigrationRecord] = []
        self.last: dict[int, MigrationRecord] = {}  # per VM, its latest ended migration

    # ---------------------------------------------------------------- queries
    def state(self, vm: int) -> str:
        """'running' while in flight, else the status of its last migration ('completed', ...), or 'none'."""
        if vm in self.under_way:
            return "running"
        last = self.last.get(vm)
        return "none" if last is None else last.status

    def touching(self, host: int) -> list[int]:
        """The VMs migrating from or to the host."""
        return [vm for vm, (mig, _) in self.under_way.items() if host in (mig.src, mig.dst)]

    def paused(self, out: np.ndarray, step: float) -> np.ndarray:
        """`out` (each VM's part of the coming step it does not run) with the migrating VMs' pauses: a
        stop-and-copy under way, and vCPUs throttled by auto-converge."""
        for vm, (mig, _) in self.under_way.items():
            paused = min(1.0, mig.pause_left() / step)
            out[vm] = paused + (1.0 - paused) * mig.throttle
        return out

    # ---------------------------------------------------------------- commands
    def begin(self, mig: Migration, flow: int, memory: float) -> None:
        """A migration under way, carried by `flow`, holding `memory` MiB on its destination."""
        self.reserved_memory[mig.dst] += memory
        self.per_host[[mig.src, mig.dst]] += 1
        self.under_way[mig.vm] = (mig, flow)

    def end(self, vm: int, memory: float) -> tuple[Migration, int]:
        """The VM's migration is over: its memory on the destination released; (its model, its flow)."""
        mig, flow = self.under_way.pop(vm)
        self.reserved_memory[mig.dst] -= memory
        self.per_host[[mig.src, mig.dst]] -= 1
        return mig, flow

    def record(self, vm: int, record: MigrationRecord) -> None:
        self.log.append(record)
        self.last[vm] = record  # a lookup per poll: the log grows to tens of thousands

    def advance(
        self, rate: np.ndarray, dt: float, run: np.ndarray, now: float
    ) -> tuple[np.ndarray, list[Migration], list[Migration]]:
        """Advance every migration over the step [now, now + dt), their flows' `rate` (bit/s) cut to what
        each carried (one may end inside the step). Returns each VM's running part of the step (pauses
        included), the migrations whose guests run on their destinations now (post-copy, or the
        switch-over), and those that ended (in the order they were started)."""
        run_now = run.copy()
        self.migrating_s = np.zeros(len(run))
        self.moves = []
        arrived, ended = [], []
        for vm, (mig, flow) in list(self.under_way.items()):
            before = mig.elapsed - mig.waited
            sent, paused = mig.advance(rate[flow] / 8 if flow >= 0 else 0.0, dt)
            self.migrating_s[vm] = mig.elapsed - mig.waited - before
            if mig.fixed_time:  # off the network; the VM at 90 % on its source meanwhile
                run_now[vm] = run[vm] * (1.0 - (1.0 - _SOURCE_SHARE) * self.migrating_s[vm] / dt)
                self.moves.append(self._move(mig, now, dt))
            else:
                rate[flow] = sent * 8 / dt
                run_now[vm] = min(run[vm], (1.0 - paused / dt) * (1.0 - mig.throttle))
            if mig.on_destination:
                arrived.append(mig)
            if mig.done:
                ended.append(mig)
        return run_now, arrived, ended

    @staticmethod
    def _move(mig: Migration, now: float, dt: float) -> Move:
        """A fixed-delay migration's part of the step [now, now + dt), in seconds into it."""
        end = min(mig.started + mig.elapsed - now, dt) if mig.done else dt
        return Move(mig.vm, mig.src, mig.dst, max(mig.started - now, 0.0), end, mig.done and mig.on_destination)
