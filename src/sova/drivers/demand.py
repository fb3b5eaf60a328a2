"""What a VM wanted to send and receive on a libvirt host: CloudScope's demand (Eq. 5), with the
simulator's meaning, what its flows would have carried had only their own path held them back.

Sending: over each observation interval a VM wanted what it carried, unless its guest agent saw its
TCP senders held back (a socket holding at least its congestion window of bytes, ``SendQueues``); for
the fraction f of the agent's samples in which one was, it wanted what its path alone carries, so
wanted = max(carried, f x path x dt). Its path alone is its own: its VF's rate tier when it has one,
else its vNIC's libvirt ``outbound`` limit, at most the host's port. A VM behind its own limit thus
wants its limit (what it carries); one sharing a full port with others wants the port.
Receiving: what each sender wanted beyond what it carried is given to the VMs it sent to, in
proportion to the bytes it sent each over the interval (the bridges' traffic matrix): the simulator
counts a flow's demand at both its ends. Without an agent, a report or a traffic matrix, a VM wanted
what it carried. Cumulative and never below the carried bytes, like every counter of a snapshot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from sova.drivers.guest_agent import SendQueues

_INTERFACE_RE = re.compile(r"<interface type='(?:bridge|network|ethernet)'>(.*?)</interface>", re.S)
_OUTBOUND_RE = re.compile(r"<outbound\b[^>]*\baverage='(\d+)'")


def wanted_bytes(carried: float, held_fraction: float, path: float, seconds: float) -> float:
    """Bytes wanted over an interval: what was carried, or the path's bytes over the part of the interval
    the senders were held back (`path` in bit/s), whichever is more."""
    return max(carried, held_fraction * path / 8 * seconds)


def outbound_limit(xml: str, skip_macs: set[str]) -> float:
    """A VM's para-virtual NIC's libvirt ``<bandwidth><outbound average=KiB/s>`` in bit/s (0: none);
    the interfaces with a MAC in `skip_macs` (its emulated VF) are left out; several: the least."""
    limits = []
    for block in _INTERFACE_RE.finditer(xml):
        body = block.group(1)
        limit = None if any(mac in body for mac in skip_macs) else _OUTBOUND_RE.search(body)
        if limit and int(limit.group(1)) > 0:
            limits.append(int(limit.group(1)) * 1024 * 8)
    return float(min(limits)) if limits else 0.0


def path_alone(port: float, vnic_limit: float, vf_rate: float, on_vf: bool) -> float:
    """Bit/s a VM's traffic gets on its own path: its VF's tier or its vNIC's limit, at most the port."""
    own = vf_rate if on_vf else vnic_limit
    return min(port, own) if own > 0 else port


@dataclass
class SendDemand:
    """One VM's cumulative wanted sent bytes, and what the last estimate was made from."""

    wanted: float | None = None  # None until the first observation
    carried: float = 0.0
    time: float = 0.0
    samples: int | None = None  # the agent's counts as last read (None: none read yet)
    held: int = 0
    last_moved: float = 0.0  # bytes carried over the last interval
    last_extra: float = 0.0  # bytes wanted beyond them

    def update(self, now: float, carried: float, sendq: SendQueues | None, path: float) -> float:
        """The cumulative wanted bytes at `now`, given the cumulative carried bytes (monotonic) and the
        agent's newest send-queue counts (None: no agent or no report)."""
        fraction = self._held_fraction(sendq)
        if self.wanted is None:  # the first observation: nothing to estimate over yet
            self.wanted, self.last_moved, self.last_extra = carried, 0.0, 0.0
        else:
            moved = max(0.0, carried - self.carried)
            wanted = wanted_bytes(moved, fraction, path, max(0.0, now - self.time))
            self.wanted += wanted
            self.last_moved, self.last_extra = moved, wanted - moved
        self.time, self.carried = now, carried
        return self.wanted

    def _held_fraction(self, sendq: SendQueues | None) -> float:
        """Of the agent's samples since the last observation, the fraction that found a sender held back;
        0 with no new sample (a report missing, or the same one again) and at the first counts read."""
        if sendq is None:
            return 0.0
        if self.samples is None:  # the first counts: they cover the agent's life, not this interval
            self.samples, self.held = sendq.samples, sendq.held
            return 0.0
        if sendq.samples < self.samples:  # the agent restarted: its counts began again from zero
            self.samples = self.held = 0
        samples, held = sendq.samples - self.samples, sendq.held - self.held
        self.samples, self.held = sendq.samples, sendq.held
        return held / samples if samples > 0 and 0 <= held <= samples else 0.0


class ReceiveDemand:
    """Per VM name, the cumulative wanted received bytes, and the traffic matrix as last read."""

    def __init__(self) -> None:
        self.wanted: dict[str, float] = {}
        self.carried: dict[str, float] = {}
        self.pairs: dict[tuple[str, str], float] | None = None  # None before the first observation

    def update(
        self,
        vms: tuple[str, ...],
        carried: np.ndarray,
        sent: np.ndarray,
        extra: np.ndarray,
        flows: tuple[np.ndarray, np.ndarray, np.ndarray],
    ) -> np.ndarray:
        """Cumulative wanted received bytes per VM (indexed like `vms`), from the cumulative carried
        received bytes, each VM's sent bytes and wanted-beyond-carried over the interval, and the
        cumulative VM-to-VM bytes (source index, destination index, bytes)."""
        src, dst, total = flows
        given = np.zeros(len(vms))
        pairs = {}
        for s, d, n in zip(src, dst, total, strict=True):
            key = (vms[s], vms[d])
            pairs[key] = float(n)
            if self.pairs is None:
                continue
            moved = float(n) - self.pairs.get(key, 0.0)
            if moved > 0 and sent[s] > 0 and extra[s] > 0:  # its share of what the sender sent
                given[d] += extra[s] * min(1.0, moved / sent[s])
        self.pairs = pairs
        out = np.zeros(len(vms))
        for v, vm in enumerate(vms):
            before = self.wanted.get(vm)
            moved = max(0.0, float(carried[v]) - self.carried.get(vm, float(carried[v])))
            out[v] = float(carried[v]) if before is None else before + moved + given[v]
            self.wanted[vm], self.carried[vm] = out[v], float(carried[v])
        return out
