"""HA restart: boot the VMs of a failed host on other hosts, as Proxmox HA and vSphere HA do.

The runtime declares a host failed when it has not reported for ``failure_grace`` seconds; a must rule
then keeps every VM off it, and the ``failed-hosts`` analyzer finds it. A host that only stopped reporting
may still run its VMs on the same disks, so it is fenced first (Pacemaker's rule: no recovery before the
node is known to be off): this policy plans ``fence-host`` once per failure, which its driver carries out
(the simulator powers the host off; libvirt destroys its domains if the host answers; over the bus, its
agent does, if it is alive), or an operator confirms the host is off (``sova host fenced``). Its VMs are
restarted only once it is fenced; with ``fence = false`` at once (only where a disk lock, sanlock or
virtlockd, keeps a VM from starting twice). A fence that failed is said once in the audit log, with what
the operator can do. This policy restarts each of its
VMs (with the VMs a must affinity rule binds to it there, as one group) on the host
``evacuation.destination`` picks: on, with room, within the rules, least loaded. Larger VMs go first, as they are the hardest to fit. A VM whose disks are local to the failed
host (the snapshot's ``vm_disk_local``) cannot be restarted elsewhere; that, and a VM no host can take, is
reported in the audit log once. CPU: a restarted VM counts the CPU it used in the window before its host's
last report (its counters stopped with the host), and a host stays under ``cpu_limit``.
"""

from __future__ import annotations

import numpy as np

from sova.analyze.findings import Findings
from sova.analyze.host_failure import HostFailed
from sova.model.actions import OK, Action, FenceHost, RestartVM
from sova.model.knowledge import Knowledge
from sova.model.placement_rules import hosts_failed
from sova.model.schema import Field
from sova.plan.base import Policy, register
from sova.plan.evacuation import LOAD_WINDOW, Room, destination, group_of


@register
class HaRestart(Policy):
    name = "ha-restart"
    priority = 100  # VMs of a failed host come back before anything else
    loop = "global"
    summary = "restart the VMs of a failed host on other hosts, within the placement rules and the room left"
    analyzers = {"failed-hosts": {}}
    schema = {
        "period": Field("duration", 10.0, "how often the policy runs while a host is failed", lo=0, lo_open=True),
        "cpu_limit": Field("float", 1.0, "the most CPU a host may carry with the restarted VMs", lo=0, hi=1),
        "fence": Field(
            "bool", True, "fence a failed host before its VMs start elsewhere (off: only where disk locks guard)"
        ),
    }

    def __init__(self, **settings):
        super().__init__(**settings)
        self._said: set[str] = set()  # VMs reported as not restartable
        self._fencing: set[str] = set()  # failed hosts whose fence was planned (once per failure)

    def wants_to_run(self, knowledge: Knowledge) -> bool:
        return bool(hosts_failed(knowledge.rules))

    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        snap = knowledge.latest
        failures = findings.of(HostFailed)
        fences = self._fences(failures)
        if self.settings["fence"]:
            failures = tuple(f for f in failures if f.fenced)
        failed = [snap.host_position[f.host] for f in failures]
        down = np.flatnonzero(np.isin(snap.vm_host, failed))
        self._said &= {snap.vms[v] for v in down}
        if not len(down):
            return fences
        bound = knowledge.rules.bind(snap.vms, snap.hosts)
        room = Room.of(snap, knowledge)
        for found in failures:  # what the failed host's VMs used before it went silent
            h = snap.host_position[found.host]
            then = knowledge.at_or_before(found.last_report) if np.isfinite(found.last_report) else None
            before = knowledge.vm_cpu_cores(LOAD_WINDOW, end=then.time) if then is not None else None
            for v in np.flatnonzero(snap.vm_host == h) if before is not None else ():
                k = then.vm_position.get(snap.vms[v])
                if k is not None:
                    room.cores[v] = before[k]
        placement = snap.vm_host.copy()
        actions: list[Action] = fences
        for v in down[np.argsort(-snap.vm_memory[down], kind="stable")]:
            if placement[v] != snap.vm_host[v]:
                continue  # restarted with its group
            host = snap.hosts[placement[v]]
            if snap.vm_disk_local is not None and snap.vm_disk_local[v]:
                self._stuck(snap.vms[v], f"{snap.vms[v]} cannot be restarted: its disks are on {host}, which failed")
                continue
            group = group_of(bound, int(v), placement)
            dst = destination(bound, snap, group, placement, room, self.settings["cpu_limit"])
            if dst is None:
                names = ", ".join(snap.vms[m] for m in group)
                self._stuck(snap.vms[v], f"{names} of failed {host}: no host is on, has room and keeps their rules")
                continue
            for member in group:
                why = f"{host} failed; {snap.hosts[dst]} is the least loaded host with room within the rules"
                actions.append(RestartVM(snap.vms[member], snap.hosts[dst], policy=self.name, reason=why))
                room.take(int(member), int(placement[member]), dst)
                placement[member] = dst
        return actions

    def _fences(self, failures: tuple[HostFailed, ...]) -> list[Action]:
        """A fence for each failed host not fenced and not tried since it failed; a failed fence said once."""
        for action, outcome in self.outcomes:
            if isinstance(action, FenceHost) and outcome.status != OK:
                text = (
                    f"{action.host} could not be fenced ({outcome.message}); its VMs stay down until it is: "
                    f"once it is off, say so with `sova host fenced {action.host}`"
                )
                self.notes.append((action.host, text))
        self._fencing &= {f.host for f in failures}
        if not self.settings["fence"]:
            return []
        fences: list[Action] = []
        for found in failures:
            if not found.fenced and found.host not in self._fencing:
                self._fencing.add(found.host)
                why = f"{found.host} failed; fenced before its {found.vms} VM(s) start elsewhere"
                fences.append(FenceHost(found.host, policy=self.name, reason=why))
        return fences

    def _stuck(self, vm: str, text: str) -> None:
        if vm not in self._said:
            self._said.add(vm)
            self.notes.append((vm, text))
