"""CloudScope's interference-aware scheduling (the CloudScope paper, §IV-A, Algorithm 1).

Every ``period``: the VMs whose predicted V-slowdown is at least ``slowdown_above`` (the ``interference``
findings), among those ``vms`` names (a glob; all by default), are the targeted VMs, slowest first. For
each, Predict(β_j, PM_k) gives its slowdown on every host k at once (``vslowdown.slowdown_if_placed``);
among the hosts with the memory and vCPUs (at most ``cpu_ratio`` per core) it needs and a finite
prediction, the one with the smallest slowdown is PM_candidate, and the VM moves there when that saves
at least ``min_gain`` of its slowdown now. Up to ``max_moves`` VMs
move per round, each move's load counted on its new host before the next VM is placed. A VM that moved
within ``min_residence`` seconds, is migrating, or holds an SR-IOV VF (a VF must be detached first: the
``dsriov-vlm`` policy does that) is not targeted. A host whose set of VMs changed within the window neither sends
nor receives (its measured load is not the load it has now), so one round's moves are measured before
the next acts on them. The executor's rails (capacity, concurrency, hold-down) still apply.
"""

from __future__ import annotations

import fnmatch
from dataclasses import replace

import numpy as np

from sova.analyze.findings import Findings
from sova.analyze.interference import Slowdown
from sova.analyze.loading_vectors import VmUsage, host_load, loading_vectors, vm_load, vm_terms, window_usage
from sova.analyze.vslowdown import HostLoad, slowdown_if_placed
from sova.model.actions import Action, Migrate
from sova.model.knowledge import Knowledge
from sova.model.schema import Field
from sova.model.snapshot import VmRequest
from sova.plan.admission_policies import HostRoom
from sova.plan.base import Policy, register
from sova.plan.host_filter import HostFilter, restricted


@register
class CloudScope(Policy):
    name = "cloudscope"
    priority = 50  # relieving a VM predicted slow
    summary = "move the VMs predicted to slow down most to the host where they would slow down least (Alg. 1)"
    schema = {
        "period": Field("duration", 60.0, "how often the policy runs", lo=0, lo_open=True),
        "window": Field(
            "duration", 60.0, "seconds the loading vectors and host loads are learned over", lo=0, lo_open=True
        ),
        "slowdown_above": Field("float", 1.1, "a VM predicted at least this much slower than alone is targeted", lo=1),
        "min_gain": Field("float", 0.05, "move only if the slowdown falls by this share of itself", lo=0, hi=1),
        "max_moves": Field("int", 2, "migrations per round", lo=0),
        "min_residence": Field("duration", 600.0, "a VM that just moved is not targeted for this long", lo=0),
        "cpu_ratio": Field("float", 4.0, "vCPUs per host core a destination may hold", lo=0, lo_open=True),
        "vms": Field("str", "*", "the VMs it may move: a name or glob (Algorithm 1's targeted VMs)"),
        "guard": Field(
            "bool", True, "keep the profile's other policies from moving a VM where it is predicted slowdown_above"
        ),
    }
    analyzers = {"interference": {}}

    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        p = self.settings
        usage = window_usage(knowledge, p["window"])
        if usage is None:
            return []
        snap = usage.snapshot
        recent = knowledge.placement.moved_within(snap.time, p["min_residence"])
        movable = set(fnmatch.filter(snap.vms, p["vms"]))
        targeted = sorted(
            (f for f in findings.of(Slowdown) if f.notable and f.vm in movable and f.vm not in recent),
            key=lambda f: -f.slowdown,
        )
        terms, beta = vm_terms(usage), loading_vectors(usage)
        vm_host = snap.vm_host.copy()
        rules = HostFilter.of(knowledge, vm_host, self)
        targeted = [f for f in targeted if rules is None or f.vm not in rules.pinned]
        room = HostRoom(snap, p["cpu_ratio"])
        changed = knowledge.placement.hosts_within(knowledge.placement.host_changed, snap.hosts, snap.time, p["window"])
        load = host_load(usage, terms)
        guests = np.bincount(vm_host, minlength=len(snap.hosts))
        actions: list[Action] = []
        for found in targeted:
            if len(actions) >= p["max_moves"]:
                break
            j = snap.vm_position[found.vm]
            if snap.vm_migrating[j] or snap.vm_nic[j] != "vnic":
                continue
            here = int(vm_host[j])
            if changed[here]:
                continue
            slowdown = slowdown_if_placed(load, vm_load(terms, j), guests, beta[j], here)
            request = VmRequest(found.vm, int(snap.vm_vcpus[j]), float(snap.memory_held()[j]), False, snap.time)
            fits = room.fits(request) & ~changed & np.isfinite(slowdown)
            fits[here] = False
            fits = restricted(rules, j, fits)
            if not fits.any():
                continue
            k = int(np.flatnonzero(fits)[np.argmin(slowdown[fits])])
            if np.isfinite(slowdown[here]) and slowdown[k] > slowdown[here] * (1 - p["min_gain"]):
                continue
            room.take(k, request)
            vm_host[j] = k
            load, guests = _load_with(usage, terms, vm_host), np.bincount(vm_host, minlength=len(snap.hosts))
            actions.append(
                Migrate(
                    found.vm,
                    snap.hosts[k],
                    policy=self.name,
                    reason=f"predicted slowdown {slowdown[here]:.2f} on {snap.hosts[here]}, {slowdown[k]:.2f} on "
                    f"{snap.hosts[k]} (the least of {int(fits.sum())} hosts with room)",
                )
            )
        return actions

    def filter_hosts(self, knowledge: Knowledge, vm: int, candidates: np.ndarray) -> np.ndarray | None:
        """Extension point (with ``guard``): the hosts where `vm` is not predicted slowdown_above or more
        (a host it cannot be predicted on passes)."""
        model = _predictor(knowledge, self.settings["window"], self.__dict__.setdefault("_cache", {}))
        if not self.settings["guard"] or model is None:
            return None
        terms, beta, load, guests = model
        here = int(knowledge.latest.vm_host[vm])
        slowdown = slowdown_if_placed(load, vm_load(terms, vm), guests, beta[vm], here)
        return ~(np.isfinite(slowdown) & (slowdown >= self.settings["slowdown_above"]))


def _predictor(knowledge: Knowledge, window: float, cache: dict):
    """The window's usage, terms, loading vectors, host loads and guests, learned once per observation."""
    time = knowledge.latest.time
    if cache.get("time") != time:
        usage = window_usage(knowledge, window)
        cache.clear()
        cache["time"] = time
        if usage is not None:
            terms = vm_terms(usage)
            guests = np.bincount(usage.snapshot.vm_host, minlength=len(usage.snapshot.hosts))
            cache["model"] = (terms, loading_vectors(usage), host_load(usage, terms), guests)
    return cache.get("model")


def _load_with(usage: VmUsage, terms: dict[str, np.ndarray], vm_host: np.ndarray) -> HostLoad:
    """Host loads with the VMs where this round's plan puts them, each taking its share of Dom0's
    measured work along."""
    snap, n = usage.snapshot, len(usage.snapshot.hosts)
    share = terms["dom0_util"]
    dom0 = usage.dom0_util + np.bincount(vm_host, share, n) - np.bincount(snap.vm_host, share, n)
    moved = replace(usage, snapshot=replace(snap, vm_host=vm_host), dom0_util=np.maximum(dom0, 0.0))
    return host_load(moved, terms)
