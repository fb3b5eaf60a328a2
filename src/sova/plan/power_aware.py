"""Power-aware dynamic consolidation of Beloglazov and Buyya (CCPE 24(13), 2012): every period, find the
overloaded hosts (THR, IQR, MAD, LR or LRR over each host's CPU history), take VMs off them one at a time
(MMT, MC, MU or RS) until they are not, place those with PABFD on hosts they do not overload, then empty
the least loaded hosts where all their VMs fit elsewhere (``consolidate``).

A VM's CPU history is what it asked for in each period (cores used plus cores it waited for), as the
policy observed it; a host's history is the sum of its current VMs' histories over its cores, aligned
at the newest sample (a VM that arrived later adds nothing before it came). PABFD's "would it overload"
check uses the host's own detector settings at the load after the move: THR's threshold, IQR's or MAD's
threshold from the host's history, LR's safety parameter on the utilisation after (not a new regression).

What is not the paper's yet: the policy sees no host power curves (the driver reports none), so PABFD's
"least power rise" is taken on a straight line of utilisation: the host whose utilisation rises least,
the first of a tie; and a host emptied is not switched off (the simulator draws its idle power). Both
come with issue 16's host power states and the hosts' power models in the inventory.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from sova.analyze import overload
from sova.analyze.findings import Findings
from sova.model.actions import Action, Migrate
from sova.model.knowledge import Knowledge
from sova.model.schema import Field
from sova.plan import vm_selection as select
from sova.plan.base import Policy, register
from sova.plan.power_aware_placement import Cluster, consolidate, pabfd

DETECTORS = ("thr", "iqr", "mad", "lr", "lrr")


@register
class PowerAware(Policy):
    name = "power-aware"
    summary = "Beloglazov-Buyya consolidation: overload detection, VM selection, PABFD, emptying underloaded hosts"
    params = {
        "period": Field("duration", 300.0, "how often it runs (CloudSim's scheduling interval)", lo=0, lo_open=True),
        "detector": Field("str", "thr", "overload detection: thr, iqr, mad, lr or lrr", choices=DETECTORS),
        "threshold": Field("float", 0.8, "THR's utilisation threshold", lo=0, lo_open=True),
        "safety": Field("float", 1.5, "IQR's, MAD's, LR's and LRR's safety parameter s", lo=0),
        "selection": Field("str", "mmt", "which VM leaves: mmt, mc, mu or rs", choices=select.CRITERIA),
        "consolidate": Field("bool", True, "empty underloaded hosts whose VMs all fit elsewhere"),
        "history": Field("int", 30, "samples of each VM's CPU kept", lo=12),
        "seed": Field("int", 0, "RS's random generator"),
    }

    def __init__(self, **params):
        super().__init__(**params)
        self.vm_history: dict[str, deque[float]] = {}
        self.rng = np.random.default_rng(self.settings["seed"])

    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        snap = knowledge.latest
        asked = self._observe(knowledge)
        if asked is None:
            return []
        settled = ~snap.vm_migrating
        history = self._host_history(snap)
        overloaded = self._overloaded(history) & (np.bincount(snap.vm_host, minlength=len(snap.hosts)) > 0)
        cluster = Cluster(
            capacity=snap.host_cores.astype(float),
            load=np.bincount(snap.vm_host, weights=asked, minlength=len(snap.hosts)),
            memory_free=snap.host_memory - snap.committed_memory(),
            curves=np.tile(np.linspace(0, 1, 11), (len(snap.hosts), 1)),  # the policy's proxy: utilisation
            vm_host=snap.vm_host.copy(),
            vm_demand=asked,
            vm_memory=snap.vm_memory.astype(float),
        )
        would = self._would_overload(history, cluster)
        leaving = []
        for host in np.flatnonzero(overloaded):
            candidates = list(np.flatnonzero((snap.vm_host == host) & settled))
            left = cluster.load[host]

            def still(chosen, host=host, left=left):
                return would(int(host), left - float(asked[chosen].sum()) if chosen else left)

            leaving += select.select_until_relieved(candidates, lambda c: self._choose(c, snap, asked), still)
        pabfd(cluster, leaving, ~overloaded, would)
        if self.settings["consolidate"]:
            consolidate(cluster, overloaded | ~_settled_hosts(snap), would)
        return [self._migrate(snap, vm, dst, overloaded) for vm, dst in _net_moves(cluster.moves, snap.vm_host)]

    # ------------------------------------------------------------------ monitoring
    def _observe(self, knowledge: Knowledge) -> np.ndarray | None:
        """Each VM's cores asked over the last period, appended to its history; None before a window exists."""
        w = knowledge.window(self.period)
        if w is None:
            return None
        old, new = w
        dt = new.time - old.time
        if dt <= 0:
            return None
        asked = (new.counters.cpu_time - old.counters.cpu_time + new.counters.wait_time - old.counters.wait_time) / dt
        asked = np.maximum(asked, 0.0)
        for vm, value in zip(new.vms, asked, strict=True):
            self.vm_history.setdefault(vm, deque(maxlen=self.settings["history"])).append(float(value))
        for gone in set(self.vm_history) - set(new.vms):
            del self.vm_history[gone]
        return asked

    def _host_history(self, snap) -> np.ndarray:
        """Hosts x samples (newest last) of utilisation: the sum of each host's VMs' histories over its cores."""
        length = max((len(h) for h in self.vm_history.values()), default=1)
        out = np.zeros((len(snap.hosts), length))
        for vm, host in zip(snap.vms, snap.vm_host, strict=True):
            series = self.vm_history.get(vm, ())
            if series:
                out[host, length - len(series) :] += np.asarray(series)
        return out / snap.host_cores[:, None]

    # ------------------------------------------------------------------ detection
    def _overloaded(self, history: np.ndarray) -> np.ndarray:
        p = self.settings
        if p["detector"] == "thr":
            return overload.thr(history[:, -1], p["threshold"])
        if p["detector"] in ("iqr", "mad"):
            return overload.adaptive(history, p["safety"], p["detector"])
        return overload.regression(history, p["safety"], robust=p["detector"] == "lrr")

    def _would_overload(self, history: np.ndarray, cluster: Cluster):
        """(host, load) -> whether the host's detector calls it overloaded at that load."""
        p = self.settings
        if p["detector"] == "thr":
            limit = np.full(len(history), p["threshold"])
        elif p["detector"] in ("iqr", "mad") and history.shape[1] >= overload.MIN_HISTORY:
            method = overload.iqr_threshold if p["detector"] == "iqr" else overload.mad_threshold
            limit = method(history, p["safety"])
        elif p["detector"] in ("lr", "lrr") and history.shape[1] >= 10:
            limit = np.full(len(history), 1.0 / max(p["safety"], 1e-12))
        else:
            limit = np.full(len(history), overload.FALLBACK_THRESHOLD)
        return lambda host, load: load / cluster.capacity[host] > limit[host]

    # ------------------------------------------------------------------ selection and actions
    def _choose(self, candidates: list[int], snap, asked: np.ndarray) -> int:
        criterion = self.settings["selection"]
        memory = snap.vm_memory[candidates].astype(float)
        bandwidth = snap.nic_bandwidth[snap.vm_host[candidates]]
        if criterion == "mmt":
            return select.minimum_migration_time(memory, bandwidth)
        if criterion == "mu":
            return select.minimum_utilisation(asked[candidates] / snap.vm_vcpus[candidates])
        if criterion == "rs":
            return select.random_selection(len(candidates), self.rng)
        series = [self.vm_history[snap.vms[vm]] for vm in candidates]
        length = min(len(s) for s in series)
        history = np.array([list(s)[-length:] for s in series])
        return select.maximum_correlation(history, memory, bandwidth)

    def _migrate(self, snap, vm: int, dst: int, overloaded: np.ndarray) -> Migrate:
        src = int(snap.vm_host[vm])
        why = "overloaded" if overloaded[src] else "underloaded: emptied so that it can be switched off"
        detector = self.settings["detector"].upper()
        return Migrate(
            vm=snap.vms[vm],
            dst=snap.hosts[dst],
            policy=self.name,
            reason=f"{snap.hosts[src]} {why} ({detector}, {self.settings['selection'].upper()}); PABFD: "
            f"{snap.hosts[dst]} has the least power rise",
        )


def _settled_hosts(snap) -> np.ndarray:
    """Hosts with no VM migrating in or out (consolidation leaves the others alone)."""
    busy = np.zeros(len(snap.hosts), dtype=bool)
    busy[snap.vm_host[snap.vm_migrating]] = True
    return ~busy


def _net_moves(moves: list[tuple[int, int]], start: np.ndarray) -> list[tuple[int, int]]:
    """Each VM's final destination, for the VMs that end away from where they are now."""
    final = dict(moves)
    return [(vm, dst) for vm, dst in final.items() if start[vm] != dst]
