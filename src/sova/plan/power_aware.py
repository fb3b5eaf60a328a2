"""Power-aware dynamic consolidation of Beloglazov and Buyya (CCPE 24(13), 2012): every period, find the
overloaded hosts (THR, IQR, MAD, LR or LRR over each host's CPU history), take VMs off them one at a time
(MMT, MC, MU or RS) until they are not, place those with PABFD on hosts they do not overload (waking a
sleeping host if need be), then empty the least loaded hosts where all their VMs fit elsewhere
(``consolidate``). ``host-standby`` in the same profile puts the emptied hosts to sleep.

The ``overload`` analyzer judges the hosts (its findings, in the audit log, are each plan's evidence): a
VM's CPU history is what it asked for in each period (``analyze.cpu_asked``), a host's the sum of its
current VMs' histories over its capacity (a VM that arrived later adds nothing before it came). PABFD's
"would it overload" check uses the host's own detector settings at the load after the move: THR's
threshold, IQR's or MAD's threshold from the host's history, LR's safety parameter on the utilisation
after (not a new regression). PABFD's power rise is read from each host's power curve as the driver
reports it (a straight line of utilisation where it reports none).
"""

from __future__ import annotations

import numpy as np

from sova.analyze.cpu_asked import CpuAsked, asked_in, core_speed, cpu_asked
from sova.analyze.findings import Findings, per_host
from sova.analyze.overload import FITS, QUARTILES, Overload, estimators_of, summed_by_host, vm_histories
from sova.analyze.overload import overloaded as judged_overloaded
from sova.model.actions import Action, Migrate
from sova.model.knowledge import Knowledge
from sova.model.power_models import POINTS
from sova.model.schema import MAX_SEED, Field
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
        "fit": Field(
            "str",
            "weighted",
            "LR's and LRR's line: weighted (the paper's tricube, bisquare for LRR) or ols (CloudSim 3.0.3's "
            "ordinary least squares; LRR then equals LR)",
            choices=FITS,
        ),
        "quartiles": Field(
            "str",
            "linear",
            "IQR's quartiles: linear (interpolated) or rank (CloudSim 3.0.3's MathUtil.iqr: the round(p (n + 1))-th "
            "smallest)",
            choices=QUARTILES,
        ),
        "rise_from": Field(
            "str",
            "now",
            "PABFD's power rise from: now (the host's power with this round's moves so far; a host not on draws "
            "nothing, the paper's) or round-start (CloudSim 3.0.3: its power before the round, a host not on at "
            "idle power; consolidation then orders hosts by their load before the round and leaves the hosts "
            "this round woke alone)",
            choices=("now", "round-start"),
        ),
        "after_check": Field(
            "str",
            "limit",
            "whether a move would overload its destination: limit (the utilisation after within the limit the "
            "detector sets now: THR's threshold, IQR's or MAD's from the host's history, 1/s for LR and LRR) or "
            "history (CloudSim 3.0.3: the detector run again on the host's history with the VM's added)",
            choices=("limit", "history"),
        ),
        "selection": Field("str", "mmt", "which VM leaves: mmt, mc, mu or rs", choices=select.CRITERIA),
        "mu_of": Field(
            "str",
            "host",
            "MU's utilisation: of the VM's vCPUs at its host's core speed (host), or of its own MIPS where the "
            "driver reports them (vm: CloudSim 3.0.3's, the VM's demand over vm.getMips())",
            choices=("host", "vm"),
        ),
        "consolidate": Field("bool", True, "empty underloaded hosts whose VMs all fit elsewhere"),
        "history": Field("int", 30, "periods of CPU history the detector judges (the Knowledge keeps them)", lo=12),
        "seed": Field("int", 0, "RS's random generator", lo=0, hi=MAX_SEED),
    }

    analyzers = {"overload": {}}  # its detector, on each host's CPU asked per period

    def __init__(self, **settings):
        super().__init__(**settings)
        self.rng = np.random.default_rng(self.settings["seed"])

    def plan(self, knowledge: Knowledge, findings: Findings) -> list[Action]:
        verdicts = findings.of(Overload)
        found = asked_in(knowledge, self.period)
        if not verdicts or found is None:
            return []
        snap, asked = found
        overloaded = np.array(per_host(verdicts, snap.hosts, "overloaded"), dtype=bool)
        settled = ~snap.vm_migrating
        cluster = Cluster(
            capacity=snap.host_cores * core_speed(snap),
            load=np.bincount(snap.vm_host, weights=asked, minlength=len(snap.hosts)),
            memory_free=snap.host_memory - snap.committed_memory(),
            curves=_curves(snap),
            on=snap.hosts_on(),
            limit=np.array(per_host(verdicts, snap.hosts, "limit"), dtype=float),
            vm_host=snap.vm_host.copy(),
            vm_demand=asked,
            vm_memory=snap.memory_held().astype(float),  # what a move needs where it goes
            rise_from=self.settings["rise_from"],
            **(self._history_check(knowledge, snap) if self.settings["after_check"] == "history" else {}),
        )
        cluster.rules = HostFilter.of(knowledge, cluster.vm_host, self)
        pinned = pinned_mask(cluster.rules, snap.vms)
        settled &= ~pinned
        history = cpu_asked(knowledge, self.period, self.settings["history"]) if self._correlates(overloaded) else None
        leaving = []
        for host in np.flatnonzero(overloaded):
            candidates = list(np.flatnonzero((snap.vm_host == host) & settled))

            def still(chosen, host=host):
                return cluster.overloaded_without(host, chosen)

            leaving += select.select_until_relieved(candidates, lambda c: self._choose(c, snap, asked, history), still)
        pabfd(cluster, leaving, ~overloaded)
        if self.settings["consolidate"]:
            held = np.bincount(snap.vm_host, weights=pinned, minlength=len(snap.hosts)) > 0  # a host keeping a VM
            consolidate(cluster, overloaded | ~_settled_hosts(snap) | held)
        net = _net_moves(cluster.moves, snap.vm_host)
        # a VM placed by the overload phase and moved on as its new host is emptied goes once, to where it
        # ends; CloudSim migrates (and counts) it once per move
        self.counts["moves_merged"] = self.counts.get("moves_merged", 0) + len(cluster.moves) - len(net)
        return [self._migrate(snap, vm, dst, overloaded) for vm, dst in net]

    def _history_check(self, knowledge: Knowledge, snap) -> dict:
        """The cluster's fields for CloudSim's check of a move: each VM's and host's CPU history (MIPS, as
        long as the longest VM's) and the detector to run on a host's history with a VM's added."""
        found = cpu_asked(knowledge, self.period, self.settings["history"])
        if found is None:
            return {}
        vm_history = vm_histories(found)
        detector, threshold, safety = (self.settings[key] for key in ("detector", "threshold", "safety"))
        estimators = estimators_of(self.settings)
        return {
            "history": summed_by_host(snap.vm_host, vm_history, len(snap.hosts)),
            "vm_history": vm_history,
            "judge": lambda utilisation: judged_overloaded(utilisation, detector, threshold, safety, estimators),
        }

    def _correlates(self, overloaded: np.ndarray) -> bool:
        """Whether VMs leave by MC this round (it alone reads each VM's history)."""
        return self.settings["selection"] == "mc" and bool(overloaded.any())

    # ------------------------------------------------------------------ selection and actions
    def _choose(self, candidates: list[int], snap, asked: np.ndarray, history: CpuAsked | None) -> int:
        criterion = self.settings["selection"]
        memory = snap.vm_memory[candidates].astype(float)
        bandwidth = snap.nic_bandwidth[snap.vm_host[candidates]]
        if criterion == "mmt":
            return select.minimum_migration_time(memory, bandwidth)
        if criterion == "mu":
            return select.minimum_utilisation(asked[candidates] / self._mu_base(snap, candidates))
        if criterion == "rs":
            return select.random_selection(len(candidates), self.rng)
        length = max(int(history.samples[candidates].min()), 1)
        return select.maximum_correlation(history.history[candidates, -length:], memory, bandwidth)

    def _mu_base(self, snap, candidates: list[int]) -> np.ndarray:
        """What MU takes each VM's utilisation of: its vCPUs at its host's core speed, or (mu_of = "vm") at
        its own MIPS where the driver reports them, as CloudSim 3.0.3 does."""
        cores = snap.vm_vcpus[candidates] * core_speed(snap)[snap.vm_host[candidates]]
        if self.settings["mu_of"] != "vm" or snap.vm_mips is None:
            return cores
        own = snap.vm_vcpus[candidates] * snap.vm_mips[candidates]
        return np.where(own > 0, own, cores)

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
