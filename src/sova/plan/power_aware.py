"""Power-aware dynamic consolidation of Beloglazov and Buyya (CCPE 24(13), 2012): every period, find the
overloaded hosts (THR, IQR, MAD, LR or LRR over each host's CPU history), take VMs off them one at a time
(MMT, MC, MU or RS) until they are not, place those with PABFD on hosts they do not overload (waking a
sleeping host if need be), then empty the least loaded hosts where all their VMs fit elsewhere
(``consolidate``). ``host-standby`` in the same profile puts the emptied hosts to sleep.

A VM's CPU history is what it asked for in each period (cores used plus cores it waited for, times the
core's MIPS where the driver reports it, so that histories and loads compare across hosts of different
speeds), as the policy observed it; a host's history is the sum of its current VMs' histories over its
capacity, aligned at the newest sample (a VM that arrived later adds nothing before it came). PABFD's
"would it overload" check uses the host's own detector settings at the load after the move: THR's
threshold, IQR's or MAD's threshold from the host's history, LR's safety parameter on the utilisation
after (not a new regression). PABFD's power rise is read from each host's power curve as the driver
reports it (a straight line of utilisation where it reports none).
"""

from __future__ import annotations

import numpy as np

from sova.analyze import overload
from sova.analyze.findings import Findings
from sova.model.actions import Action, Migrate
from sova.model.knowledge import Knowledge
from sova.model.power_models import POINTS
from sova.model.schema import MAX_SEED, Field
from sova.model.snapshot import counter_rate
from sova.plan import vm_selection as select
from sova.plan.base import Policy, register
from sova.plan.host_filter import HostFilter, pinned_mask
from sova.plan.power_aware_placement import Cluster, consolidate, pabfd

DETECTORS = ("thr", "iqr", "mad", "lr", "lrr")


@register
class PowerAware(Policy):
    name = "power-aware"
    priority = 20  # saving energy yields to everything else
    summary = "Beloglazov-Buyya consolidation: overload detection, VM selection, PABFD, emptying underloaded hosts"
    schema = {
        "period": Field("duration", 300.0, "how often it runs (CloudSim's scheduling interval)", lo=0, lo_open=True),
        "detector": Field("str", "thr", "overload detection: thr, iqr, mad, lr or lrr", choices=DETECTORS),
        "threshold": Field("float", 0.8, "THR's utilisation threshold", lo=0, lo_open=True),
        "safety": Field("float", 1.5, "IQR's, MAD's, LR's and LRR's safety parameter s", lo=0),
        "selection": Field("str", "mmt", "which VM leaves: mmt, mc, mu or rs", choices=select.CRITERIA),
        "consolidate": Field("bool", True, "empty underloaded hosts whose VMs all fit elsewhere"),
        "history": Field("int", 30, "samples of each VM's CPU kept", lo=12),
        "seed": Field("int", 0, "RS's random generator", lo=0, hi=MAX_SEED),
    }

    def __init__(self, **settings):
        super().__init__(**settings)
        self.history_vms: tuple[str, ...] = ()  # the VMs of the history's rows
        self.history = np.zeros((0, self.settings["history"]))  # VMs x samples of CPU asked, newest last
        self.samples = np.zeros(0, dtype=np.int64)  # per VM: samples taken
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
            capacity=snap.host_cores * _speed(snap),
            load=np.bincount(snap.vm_host, weights=asked, minlength=len(snap.hosts)),
            memory_free=snap.host_memory - snap.committed_memory(),
            curves=_curves(snap),
            on=snap.hosts_on(),
            limit=self._limits(history),
            vm_host=snap.vm_host.copy(),
            vm_demand=asked,
            vm_memory=snap.vm_memory.astype(float),
        )
        cluster.rules = HostFilter.of(knowledge, cluster.vm_host, self)
        pinned = pinned_mask(cluster.rules, snap.vms)
        settled &= ~pinned
        leaving = []
        for host in np.flatnonzero(overloaded):
            candidates = list(np.flatnonzero((snap.vm_host == host) & settled))
            left, most = cluster.load[host], cluster.limit[host] * cluster.capacity[host]

            def still(chosen, left=left, most=most):
                return left - float(asked[chosen].sum()) > most

            leaving += select.select_until_relieved(candidates, lambda c: self._choose(c, snap, asked), still)
        pabfd(cluster, leaving, ~overloaded)
        if self.settings["consolidate"]:
            held = np.bincount(snap.vm_host, weights=pinned, minlength=len(snap.hosts)) > 0  # a host keeping a VM
            consolidate(cluster, overloaded | ~_settled_hosts(snap) | held)
        return [self._migrate(snap, vm, dst, overloaded) for vm, dst in _net_moves(cluster.moves, snap.vm_host)]

    # ------------------------------------------------------------------ monitoring
    def _observe(self, knowledge: Knowledge) -> np.ndarray | None:
        """Each VM's CPU asked over the last period (MIPS, or cores where host speeds are unknown), appended
        to its history; None before a window exists."""
        w = knowledge.window(self.period)
        if w is None:
            return None
        old, new = w
        asked = (counter_rate(old, new, "cpu_time") + counter_rate(old, new, "wait_time")) * _speed(new)[new.vm_host]
        self._keep(new.vms, asked)
        return asked

    def _keep(self, vms: tuple[str, ...], asked: np.ndarray) -> None:
        """Append a sample per VM to the history (rows in the snapshot's VM order, newest last, zeros
        before a VM's first sample), re-ordering the rows by name when the VMs changed."""
        if vms is not self.history_vms and vms != self.history_vms:
            rows = {vm: i for i, vm in enumerate(self.history_vms)}
            kept = np.array([rows.get(vm, -1) for vm in vms], dtype=np.int64)
            history, samples = np.zeros((len(vms), self.history.shape[1])), np.zeros(len(vms), dtype=np.int64)
            history[kept >= 0], samples[kept >= 0] = self.history[kept[kept >= 0]], self.samples[kept[kept >= 0]]
            self.history, self.samples = history, samples
            self.history_vms = vms
        self.history = np.roll(self.history, -1, axis=1)
        self.history[:, -1] = asked
        self.samples = np.minimum(self.samples + 1, self.history.shape[1])

    def _host_history(self, snap) -> np.ndarray:
        """Hosts x samples (newest last) of utilisation: the sum of each host's VMs' histories over its
        capacity, as long as the longest VM history."""
        length = max(int(self.samples.max(initial=0)), 1)
        recent = self.history[:, -length:]
        hosts = len(snap.hosts)
        out = np.stack([np.bincount(snap.vm_host, weights=column, minlength=hosts) for column in recent.T], axis=1)
        return out / (snap.host_cores * _speed(snap))[:, None]

    # ------------------------------------------------------------------ detection
    def _overloaded(self, history: np.ndarray) -> np.ndarray:
        p = self.settings
        if p["detector"] == "thr":
            return overload.thr(history[:, -1], p["threshold"])
        if p["detector"] in ("iqr", "mad"):
            return overload.adaptive(history, p["safety"], p["detector"])
        return overload.regression(history, p["safety"], robust=p["detector"] == "lrr")

    def _limits(self, history: np.ndarray) -> np.ndarray:
        """Per host, the utilisation its detector tolerates after a move: THR's threshold, IQR's or MAD's
        threshold from its history, 1/s for LR and LRR; the fallback threshold while the history is short."""
        p = self.settings
        if p["detector"] == "thr":
            return np.full(len(history), p["threshold"])
        if p["detector"] in ("iqr", "mad") and history.shape[1] >= overload.MIN_HISTORY:
            method = overload.iqr_threshold if p["detector"] == "iqr" else overload.mad_threshold
            return method(history, p["safety"])
        if p["detector"] in ("lr", "lrr") and history.shape[1] >= 10:
            return np.full(len(history), 1.0 / max(p["safety"], 1e-12))
        return np.full(len(history), overload.FALLBACK_THRESHOLD)

    # ------------------------------------------------------------------ selection and actions
    def _choose(self, candidates: list[int], snap, asked: np.ndarray) -> int:
        criterion = self.settings["selection"]
        memory = snap.vm_memory[candidates].astype(float)
        bandwidth = snap.nic_bandwidth[snap.vm_host[candidates]]
        if criterion == "mmt":
            return select.minimum_migration_time(memory, bandwidth)
        if criterion == "mu":
            cores = snap.vm_vcpus[candidates] * _speed(snap)[snap.vm_host[candidates]]
            return select.minimum_utilisation(asked[candidates] / cores)
        if criterion == "rs":
            return select.random_selection(len(candidates), self.rng)
        length = max(int(self.samples[candidates].min()), 1)
        history = self.history[candidates, -length:]
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


def _speed(snap) -> np.ndarray:
    """MIPS of each host's core, or 1 where the driver does not say (loads are then in cores)."""
    return np.ones(len(snap.hosts)) if snap.host_core_mips is None else snap.host_core_mips


def _curves(snap) -> np.ndarray:
    """Each host's power curve as the driver reports it; where it reports none, a line from 0 to 1 (so the
    least power rise is the least utilisation rise)."""
    if snap.host_power_curve is not None:
        return snap.host_power_curve
    return np.tile(np.linspace(0.0, 1.0, POINTS), (len(snap.hosts), 1))


def _settled_hosts(snap) -> np.ndarray:
    """Hosts with no VM migrating in or out (consolidation leaves the others alone)."""
    busy = np.zeros(len(snap.hosts), dtype=bool)
    busy[snap.vm_host[snap.vm_migrating]] = True
    return ~busy


def _net_moves(moves: list[tuple[int, int]], start: np.ndarray) -> list[tuple[int, int]]:
    """Each VM's final destination, for the VMs that end away from where they are now."""
    final = dict(moves)
    return [(vm, dst) for vm, dst in final.items() if start[vm] != dst]
