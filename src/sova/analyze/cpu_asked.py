"""The CPU each VM asked for, period by period, from the Knowledge: cores used plus cores it waited for,
times the MIPS of a core of the host it was on as the window began, where the driver reports it (so that
loads compare across hosts of different speeds), over the windows ending now, one period before, two
periods before, and so on.

Beloglazov and Buyya's overload detectors judge a host by such a history (CCPE 24(13), 2012, §6); the
``overload`` analyzer sums it per host and ``power-aware``'s MC selection correlates it per VM. A VM's
history holds the samples since it last appeared (zeros before), as a monitor that saw it come would.
"""

from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass

import numpy as np

from sova.model.knowledge import Knowledge
from sova.model.snapshot import Snapshot, counter_rate


@dataclass(frozen=True)
class CpuAsked:
    """Per VM of the latest snapshot (rows, its order) the CPU asked in each period, newest last, and how
    many of those samples it was there for (at most the history's length)."""

    history: np.ndarray  # VMs x samples
    samples: np.ndarray  # per VM


def core_speed(snap: Snapshot) -> np.ndarray:
    """MIPS of each host's core, or 1 where the driver does not say (loads are then in cores)."""
    return np.ones(len(snap.hosts)) if snap.host_core_mips is None else snap.host_core_mips


# per Knowledge, the samples computed so far: (period, newer snapshot's time) -> (that snapshot, CPU asked).
# A window's snapshots never change once added, so a sample holds while the Knowledge keeps its snapshot.
_SAMPLES: weakref.WeakKeyDictionary[Knowledge, dict[tuple[float, float], tuple[Snapshot, np.ndarray]]]
_SAMPLES = weakref.WeakKeyDictionary()
# per Knowledge, the latest history: ((period, length, latest snapshot's time), that history, that snapshot)
_LATEST: weakref.WeakKeyDictionary[Knowledge, tuple[tuple[float, int, float], CpuAsked | None, Snapshot]]
_LATEST = weakref.WeakKeyDictionary()


def asked_in(knowledge: Knowledge, period: float, end: float | None = None) -> tuple[Snapshot, np.ndarray] | None:
    """(the newer snapshot, each of its VMs' CPU asked) over the window of `period` ending at `end`
    (default: now); None where the Knowledge holds no such window. Each sample is computed once."""
    newest = knowledge.latest if end is None else knowledge.at_or_before(end)
    if newest is None:
        return None
    known = _SAMPLES.setdefault(knowledge, {})
    key = (period, newest.time)
    if key not in known:
        window = knowledge.window(period, newest.time)
        if window is None:
            return None
        old, new = window
        # cores become MIPS at the speed of the host each VM was on as the window began: a VM moved in it
        # was counted on its source (the simulator charges a step to the host it began on)
        speed = core_speed(new)[old.vm_host]
        known[key] = new, (counter_rate(old, new, "cpu_time") + counter_rate(old, new, "wait_time")) * speed
        _forget_older(known, knowledge)
    return known[key]


def _forget_older(known: dict, knowledge: Knowledge) -> None:
    """Drop the samples whose snapshot the Knowledge no longer keeps (a bounded cache, like the history)."""
    if len(known) > 2 * len(knowledge):
        oldest = knowledge.snapshots[0].time
        for key in [key for key in known if key[1] < oldest]:
            del known[key]


def cpu_asked(knowledge: Knowledge, period: float, length: int) -> CpuAsked | None:
    """The CPU asked by the latest snapshot's VMs in the last `length` periods (the windows ending now,
    a period before, ...); None before one period has passed. A sample counts for a VM while it is in
    every window from that one to now. Computed once per latest snapshot (the overload analyzer and
    power-aware's checks both read it). When the history before was taken exactly one period earlier, it
    is shifted by one sample and the newest added, instead of read again sample by sample."""
    latest = knowledge.latest
    key = (period, length, latest.time)
    kept = _LATEST.get(knowledge)
    if kept is None or kept[0] != key:
        # shifted only where every window the history holds is still kept (the runtime keeps them all)
        shift = kept is not None and kept[1] is not None and _one_period_on(kept[0], key)
        before = kept if shift and knowledge.history >= period * length else None
        asked = _shifted(knowledge, before[1], before[2], period) if before else _history(knowledge, period, length)
        kept = _LATEST[knowledge] = key, asked, latest
    return kept[1]


def _one_period_on(before: tuple[float, int, float], now: tuple[float, int, float]) -> bool:
    """The history keyed `now` has the same period and length as `before` and ends one period later."""
    return before[:2] == now[:2] and abs(now[2] - before[2] - now[0]) < 1e-9


def _shifted(knowledge: Knowledge, before: CpuAsked, then: Snapshot, period: float) -> CpuAsked | None:
    """The history one period after `before` (taken at snapshot `then`): each VM that was there then keeps
    its samples, one older, and every VM gets the newest; a VM that came since has that one alone, as
    `_history` would find (the sample before it came does not count for it)."""
    newest = asked_in(knowledge, period)
    if newest is None:  # not expected one period on; read it all again
        return _history(knowledge, period, before.history.shape[1])
    latest, asked = newest
    vms, length = len(latest.vms), before.history.shape[1]
    same = latest.vms is then.vms or latest.vms == then.vms
    rows = np.arange(vms) if same else _rows_in(then, latest.vms)
    stayed = rows >= 0
    history, samples = np.zeros((vms, length)), np.ones(vms, dtype=np.int64)
    history[stayed, :-1] = before.history[rows[stayed], 1:]
    history[:, -1] = asked if len(asked) else 0.0
    samples[stayed] = np.minimum(before.samples[rows[stayed]] + 1, length)
    return CpuAsked(history, samples)


def _history(knowledge: Knowledge, period: float, length: int) -> CpuAsked | None:
    latest = knowledge.latest
    vms = len(latest.vms)
    history, samples = np.zeros((vms, length)), np.zeros(vms, dtype=np.int64)
    present = np.ones(vms, dtype=bool)
    rows, names = np.arange(vms), latest.vms  # each latest VM's row in the snapshot read last, and its VMs
    taken = 0
    for back in range(length):
        found = asked_in(knowledge, period, latest.time - back * period)
        if found is None:
            break
        new, asked = found
        if new.vms is not names and new.vms != names:  # VMs came or went: follow each latest VM by its name
            rows = _rows_in(new, latest.vms)  # once gone, a VM stays absent: `present` keeps it so
            names = new.vms
            present &= rows >= 0
        history[:, length - 1 - back] = np.where(present, asked[np.maximum(rows, 0)] if len(asked) else 0.0, 0.0)
        samples += present
        taken += 1
    return CpuAsked(history, samples) if taken else None


def _rows_in(snap: Snapshot, names: tuple[str, ...]) -> np.ndarray:
    """Each named VM's row in `snap` (-1: not there), looked up at C speed (100,000 VMs: a few ms)."""
    return np.fromiter(map(snap.vm_position.get, names, itertools.repeat(-1)), dtype=np.int64, count=len(names))
