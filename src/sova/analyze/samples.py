"""Per-sample deltas of sensor counters over a window: the raw material of the intensity analyzers.

The Sova sensor samples every second and reports every 10 s; each analyzer works on the samples of a
window (``num`` samples). A sample is the difference of two consecutive snapshots.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from sova.model.knowledge import Knowledge
from sova.model.snapshot_align import aligned


@dataclass(frozen=True)
class Samples:
    """Arrays of shape (num samples, VMs); times in seconds, traffic in packets and bytes."""

    seconds: np.ndarray  # length of each sample (num,)
    gotten: np.ndarray  # CPU time received
    blocked: np.ndarray  # blocked (idle / waiting for I/O events)
    waiting: np.ndarray  # runnable but waiting for a CPU
    packets: np.ndarray  # sent + received, as the guest counts them (/proc/net/dev)
    data: np.ndarray  # bytes sent + received, as the guest counts them
    vcpus: np.ndarray  # (VMs,)

    @property
    def num(self) -> int:
        return len(self.seconds)

    def select(self, idx: np.ndarray) -> Samples:
        """The same samples for a subset of the VMs (e.g. one host's)."""
        return Samples(
            self.seconds,
            self.gotten[:, idx],
            self.blocked[:, idx],
            self.waiting[:, idx],
            self.packets[:, idx],
            self.data[:, idx],
            self.vcpus[idx],
        )


def window_samples(knowledge: Knowledge, seconds: float) -> Samples | None:
    """The samples of the last `seconds`, or None before two snapshots exist."""
    if len(knowledge) < 2:
        return None
    use = knowledge.since(knowledge.latest.time - seconds)
    if len(use) < 2:
        use = knowledge.snapshots[-2:]
    # VMs that came or went in the window: every snapshot indexed like the newest
    use = [aligned(s, use[-1], itertools.islice(use, k + 1, None)) for k, s in enumerate(use)]

    def series(get):
        return np.diff(np.stack([get(s) for s in use]), axis=0)

    return Samples(
        seconds=np.diff([s.time for s in use]),
        gotten=series(lambda s: s.counters.cpu_time),
        blocked=series(lambda s: s.counters.blocked_time),
        waiting=series(lambda s: s.counters.wait_time),
        packets=series(lambda s: s.counters.guest_rx_packets + s.counters.guest_tx_packets),
        data=series(lambda s: s.counters.guest_rx_bytes + s.counters.guest_tx_bytes),
        vcpus=use[-1].vm_vcpus,
    )
