"""What the libvirt driver's parts share: its errors, the binding, per-VM state and background jobs."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from sova.drivers.demand import SendDemand
from sova.drivers.guest_agent import GuestChannel
from sova.model.actions import Action

NS = 1e-9
CPU_PERIOD_US = 100_000  # vcpu_period used when a cap is set
# libvirt reads an unlimited CPU quota as -1 on cgroup v1, but on cgroup v2 ("max" in cpu.max) as its
# largest quota: 17592186044415 µs (the kernel's limit) since libvirt 7.0, 18446744073709551 before
LIBVIRT_QUOTA_MAX = 17_592_186_044_415
DEVICE_REMOVED_TIMEOUT = 15.0
GUEST_KINDS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets")
MAC_RE = re.compile(r"<mac address='([0-9a-f:]+)'/>")


def quota_is_unlimited(quota: int) -> bool:
    """Whether a CPU quota libvirt reports means no cap (either cgroup version)."""
    return quota <= 0 or quota >= LIBVIRT_QUOTA_MAX


class DriverError(Exception):
    """A driver that cannot start: bad URI, unreachable host, missing binding."""


def load_libvirt():
    """The libvirt binding, with its default handler (which prints every error to stderr) silenced:
    the driver reports errors itself."""
    try:
        import libvirt
    except ImportError as e:
        raise DriverError(
            "the libvirt driver needs the libvirt Python binding (pip install libvirt-python; on Debian it builds "
            "against libvirt-dev and pkg-config)"
        ) from e
    libvirt.registerErrorHandler(lambda _ctx, _err: None, None)
    return libvirt


@dataclass
class VmState:
    """What the driver remembers about a VM between observations."""

    index: int  # stable small number: the VF MAC
    blocked: float = 0.0
    last: tuple[float, float, float] | None = None  # (time, cpu s, wait s)
    channel: GuestChannel | None = None
    channel_host: str = ""  # the host whose socket `channel` reads
    vf_rate: float = 0.0
    vf_pci: str = ""
    raw: dict[str, float] = field(default_factory=dict)  # counters as last read
    offset: dict[str, float] = field(default_factory=dict)  # added so that counters never go back
    guest: tuple[float, float, float, float, float] | None = None  # last guest report (4 net counters, MiB used)
    from_agent: bool = False  # the guest counters come from the agent (else from the host's view)
    stats: dict[str, Any] = field(default_factory=dict)  # the newest value of every stat libvirt gave
    definition: str = ""  # its persistent domain XML, to boot it on another host if its host fails
    send: SendDemand = field(default_factory=SendDemand)  # what it wanted to send (CloudScope's demand)

    def monotonic(self, key: str, value: float) -> float:
        """A cumulative counter that survives resets: QEMU's CPU time and a new tap's byte counts start
        from zero on a migration's destination or after a NIC hot-plug."""
        last = self.raw.get(key, 0.0)
        if value < last:  # count the interval of the reset as zero: never a spike that did not happen
            self.offset[key] = self.offset.get(key, 0.0) + last - value
        self.raw[key] = value
        return value + self.offset.get(key, 0.0)

    def rebase(self, key: str, value: float) -> None:
        """The counter's source changed (the host's view to the guest agent's): continue from where it
        was, counting this interval as zero."""
        if key in self.raw:
            self.offset[key] = self.raw[key] + self.offset.get(key, 0.0) - value
        self.raw[key] = value


@dataclass
class Job:
    action: Action
    started: float
    thread: threading.Thread | None = None
    error: str = ""
    done: bool = False
    details: dict[str, Any] = field(default_factory=dict)
    src: str = ""
    reattach_rate: float = -1.0  # >= 0: the VF taken off before a migration, to give back if it fails
    cancelled: bool = False
    conns: list[Any] = field(default_factory=list)  # connections opened for this job alone


class Refused(Exception):
    """A precondition that failed: becomes a failed outcome with this message."""


def error_text(e: BaseException) -> str:
    return str(e).strip() or type(e).__name__
