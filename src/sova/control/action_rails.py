"""The executor's safety rails that belong to one kind of action, registered for its class.

Every action passes the common rails in the executor (its VM and hosts exist, none of them silent, the
placement rules where it puts a VM: ``Action.placed_on``). A kind that needs more registers a ``KindRails``
here: ``check`` says why it may not start now (a ``Busy`` verdict only "not now"), ``started`` counts it in
the pass that started it, ``finished`` remembers what its end changes. A new kind that needs no more than
the common rails needs nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from sova.model.actions import OK, Action, AttachVF, FenceHost, KindTable, Migrate, Outcome, RestartVM, SetHostPower
from sova.model.knowledge import Knowledge
from sova.model.placement_rules import hosts_failed
from sova.model.scenario import ControlSpec
from sova.model.snapshot import Snapshot

LOAD_WINDOW = 10.0  # s of CPU history the headroom rail reads


class Busy(str):
    """A verdict that only says "not now": a migration cap is full, or the destination's CPU is above the
    headroom for now. A patient plan's action waits for it (up to action_timeout); others are rejected."""


class Holder(Protocol):
    """What the rails read of the executor that holds them: its rails' settings, its clock, its memory of
    when each VM last migrated."""

    rails: ControlSpec
    last_migrated: dict[str, float]

    def now(self) -> float: ...


@dataclass
class Ledger:
    """What the migration rails count, once per pass over the queue instead of once per action: running
    migrations in all and touching each host, memory heading to each host, memory committed, and the
    hosts' and VMs' CPU (a pass may start thousands of migrations: a consolidation round)."""

    moving: int
    touching: np.ndarray  # per host: running migrations from or to it
    incoming: np.ndarray  # per host: MiB of the VMs migrating to it
    committed: np.ndarray  # per host: MiB of its VMs
    util: np.ndarray | None
    cores: np.ndarray | None

    @classmethod
    def of(cls, running: list[Action], knowledge: Knowledge) -> Ledger:
        snap = knowledge.latest
        hosts = len(snap.hosts)
        moving = [a for a in running if isinstance(a, Migrate)]
        ledger = cls(
            len(moving),
            np.zeros(hosts, dtype=np.int64),
            np.zeros(hosts),
            snap.committed_memory(),
            knowledge.host_cpu_util(LOAD_WINDOW),
            knowledge.vm_cpu_cores(LOAD_WINDOW),
        )
        # a running migration whose VM or host the snapshot lacks (a host that stopped reporting) still
        # counts against the cluster's cap, but touches no host the snapshot holds
        for m in moving:
            if m.vm in snap.vm_position and m.dst in snap.host_position:
                ledger.add(m, snap, count=False)
        return ledger

    def add(self, m: Migrate, snap: Snapshot, count: bool = True) -> None:
        v, dst = snap.vm_position[m.vm], snap.host_position[m.dst]
        src = int(snap.vm_host[v])
        self.moving += count
        self.touching[dst] += 1
        if src != dst:
            self.touching[src] += 1
        self.incoming[dst] += snap.memory_held()[v]

    def memory_short(self, snap: Snapshot, vm: str, host: str, booting: bool = False) -> str | None:
        """Why `host` lacks the memory for `vm` (its VMs' and those heading to it counted), or None. A VM
        moving needs the memory it holds; one booting (a restart) its configured memory."""
        h, v = snap.host_position[host], snap.vm_position[vm]
        free = snap.host_memory[h] - self.committed[h] - self.incoming[h]
        need = (snap.vm_memory if booting else snap.memory_held())[v]
        return f"{host} has {free:.0f} MiB free; {vm} needs {need:.0f} MiB" if free < need else None


@dataclass
class QueuePass:
    """One pass of the executor over its queue: the Knowledge it checks against and what the rails count,
    each counted once, when a rail first asks (the running actions' ledger, the VF hot-plugs not shown yet)."""

    knowledge: Knowledge
    running: list[Action]
    _ledger: Ledger | None = field(default=None, repr=False)
    _plugging: np.ndarray | None = field(default=None, repr=False)

    @property
    def snap(self) -> Snapshot:
        return self.knowledge.latest

    @property
    def ledger(self) -> Ledger:
        if self._ledger is None:
            self._ledger = Ledger.of(self.running, self.knowledge)
        return self._ledger

    @property
    def plugging(self) -> np.ndarray:
        """Per host, the VF hot-plugs running that the snapshot does not show yet (a VM still on its vNIC:
        once it shows 'attaching', vfs_used counts its VF)."""
        if self._plugging is None:
            snap = self.snap
            vms = [snap.vm_position.get(a.vm) for a in self.running if isinstance(a, AttachVF)]
            hosts = [snap.vm_host[v] for v in vms if v is not None and snap.vm_nic[v] == "vnic"]
            self._plugging = np.bincount(np.array(hosts, dtype=np.int64), minlength=len(snap.hosts))
        return self._plugging


class KindRails:
    """The rails of one kind of action beyond the common ones; by default none."""

    def check(self, holder: Holder, action, counts: QueuePass) -> str | None:
        return None

    def started(self, action, counts: QueuePass) -> None:
        """Count an action this pass started, for the checks of the actions after it in the pass."""

    def finished(self, holder: Holder, action, outcome: Outcome) -> None:
        """Remember what the end of an action changes for later checks."""


RAILS: KindTable[KindRails] = KindTable(KindRails())  # each kind's rails; none beyond the common ones by default
rails_for = RAILS.register


@rails_for(Migrate)
class _MigrationRails(KindRails):
    """Not to its own host; no VF attached; hold-down after its last migration; the per-host and cluster
    caps; memory free on the destination (migrations heading there counted); the destination's CPU under
    the headroom with the VM's load added."""

    def check(self, holder, action, counts):
        snap, ledger, rails = counts.snap, counts.ledger, holder.rails
        if action.dst not in snap.host_position:
            return f"no host named {action.dst!r}"
        v, dst = snap.vm_position[action.vm], snap.host_position[action.dst]
        src = int(snap.vm_host[v])
        if src == dst:
            return f"{action.vm} already runs on {action.dst}"
        if snap.vm_migrating[v]:
            return f"{action.vm} is already migrating"
        if snap.vm_nic[v] != "vnic":
            return f"{action.vm} has an SR-IOV VF ({snap.vm_nic[v]}); detach it first"
        last, now = holder.last_migrated.get(action.vm), holder.now()
        if last is not None and now - last < rails.hold_down:
            return f"{action.vm} was migrated {now - last:.0f} s ago; hold-down is {rails.hold_down:g} s"
        if ledger.moving >= rails.max_migrations_cluster:
            return Busy(f"{ledger.moving} migrations already running (cluster cap {rails.max_migrations_cluster})")
        for h in (src, dst):
            touching = int(ledger.touching[h])
            if touching >= rails.max_migrations_per_host:
                cap = rails.max_migrations_per_host
                return Busy(f"{snap.hosts[h]} already has {touching} migration(s) (per-host cap {cap})")
        short = ledger.memory_short(snap, action.vm, action.dst)
        if short:
            return short
        if ledger.util is not None and ledger.cores is not None:
            after = ledger.util[dst] + ledger.cores[v] / snap.host_cores[dst]
            if after > rails.cpu_headroom:  # not now: load changes (a patient plan waits for it to fall)
                return Busy(f"{action.dst} would be at {after:.0%} CPU (headroom {rails.cpu_headroom:.0%})")
        return None

    def started(self, action, counts):
        counts.ledger.add(action, counts.snap)

    def finished(self, holder, action, outcome):
        if outcome.status == OK:
            holder.last_migrated[action.vm] = holder.now()


@rails_for(RestartVM)
class _RestartRails(KindRails):
    """Memory free on the host it boots on; the next restarts of the pass count its memory there."""

    def check(self, holder, action, counts):
        return counts.ledger.memory_short(counts.snap, action.vm, action.host, booting=True)

    def started(self, action, counts):
        snap = counts.snap
        counts.ledger.incoming[snap.host_position[action.host]] += snap.vm_memory[snap.vm_position[action.vm]]


@rails_for(FenceHost)
class _FenceRails(KindRails):
    """Only a host declared failed is fenced: fencing destroys whatever still runs there."""

    def check(self, holder, action, counts):
        if action.host not in hosts_failed(counts.knowledge.rules):
            return f"{action.host} is not declared failed; only a failed host is fenced"
        return None


@rails_for(SetHostPower)
class _PowerRails(KindRails):
    """Only a host with no VM, and none migrating to it, goes to sleep or off."""

    def check(self, holder, action, counts):
        if action.state == "on":
            return None
        h = counts.snap.host_position[action.host]
        if counts.ledger.committed[h] > 0 or counts.ledger.incoming[h] > 0:
            return f"{action.host} has VMs (or one migrating to it); only an empty host can go to {action.state}"
        return None


@rails_for(AttachVF)
class _AttachRails(KindRails):
    """A plain vNIC, not migrating, and a free VF on its host (hot-plugs the snapshot does not show counted)."""

    def check(self, holder, action, counts):
        snap = counts.snap
        v = snap.vm_position[action.vm]
        h = int(snap.vm_host[v])
        if snap.vm_migrating[v]:
            return f"{action.vm} is migrating"
        if snap.vm_nic[v] != "vnic":
            return f"{action.vm} NIC is {snap.vm_nic[v]!r}, not a plain vNIC"
        if snap.vfs_used[h] + counts.plugging[h] >= snap.vfs_total[h]:
            return f"{snap.hosts[h]} has no free VF ({snap.vfs_total[h]} in all)"
        return None

    def started(self, action, counts):  # the snapshot shows it only from the next one on
        snap = counts.snap
        counts.plugging[snap.vm_host[snap.vm_position[action.vm]]] += 1
