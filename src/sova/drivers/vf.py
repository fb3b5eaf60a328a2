"""How a VF reaches a guest: SR-IOV hostdev interfaces from a PF's pool, or the lab's emulation.

SR-IOV: a ``hostdev`` interface on a free VF of the host's PF, paired with the VM's virtio NIC by
``<teaming>`` (virtio failover: the guest keeps its address on the standby virtio NIC while the VF
comes and goes), and the VF's rate set on the PF with ``ip link set PF vf N max_tx_rate MBIT``.
Emulated (hosts without SR-IOV, as in `sova lab`): a second virtio NIC on the host's bridge, its
outbound rate limited by libvirt's ``<bandwidth>``; the lab's guest agent moves its address to it
(active-backup). Both go through the same attach/detach path of the libvirt driver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sova.drivers.host_command import HostCommand


def vf_mac(vm_index: int) -> str:
    """The MAC the driver gives a VM's VF interface (locally administered, one per VM, 65,536 VMs)."""
    return f"52:54:00:78:{(vm_index >> 8) & 0xFF:02x}:{vm_index & 0xFF:02x}"


@dataclass
class SriovHost:
    """A host's SR-IOV configuration: its PF and the VFs Sova may hand out (PCI addresses)."""

    pf: str  # the PF's network interface, e.g. enp65s0f0
    vfs: list[str]  # VF PCI addresses "0000:41:10.0", in VF-number order
    bandwidth: float = 10e9  # bit/s of the port
    run: Callable[[list[str]], object] = field(default_factory=HostCommand)  # runs a command on the host

    def set_rate(self, vf_number: int, rate: float) -> None:
        """Cap a VF's transmit rate on the PF (Mbit/s, 0 = no cap), as `ip link` does."""
        cmd = ["ip", "link", "set", self.pf, "vf", str(vf_number), "max_tx_rate", str(round(rate / 1e6))]
        self.run(cmd)


@dataclass
class EmulatedVfs:
    """The lab's stand-in for a NIC with SR-IOV: `count` VFs as virtio NICs on `bridge`."""

    count: int = 2
    bridge: str = "br0"
    bandwidth: float = 1e9


def pci_parts(address: str) -> tuple[int, int, int, int]:
    """'0000:41:10.2' -> (domain, bus, slot, function)."""
    try:
        dom, bus, rest = address.split(":")
        slot, fn = rest.split(".")
        return int(dom, 16), int(bus, 16), int(slot, 16), int(fn, 16)
    except ValueError as e:
        raise ValueError(f"VF address {address!r}: expected DDDD:BB:SS.F") from e


def hostdev_xml(address: str, mac: str, standby_alias: str) -> str:
    d, b, s, f = pci_parts(address)
    return (
        f"<interface type='hostdev' managed='yes'><mac address='{mac}'/>"
        f"<source><address type='pci' domain='0x{d:04x}' bus='0x{b:02x}' slot='0x{s:02x}' function='0x{f:x}'/>"
        f"</source><teaming type='transient' persistent='{standby_alias}'/></interface>"
    )


def emulated_xml(mac: str, bridge: str, rate: float) -> str:
    bw = ""
    if rate > 0:
        kib = max(1, round(rate / 8 / 1024))  # libvirt's average is in KiB/s
        bw = f"<bandwidth><outbound average='{kib}'/></bandwidth>"
    return f"<interface type='bridge'><mac address='{mac}'/><source bridge='{bridge}'/><model type='virtio'/>{bw}</interface>"
