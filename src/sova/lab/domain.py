"""Domain XML for a lab guest: TCG (the lab machines' KVM cannot boot a stock kernel), direct kernel
boot, a qcow2 disk, a virtio NIC on the host's bridge, a virtio balloon reporting every 2 s, a serial
console to a file and the agent's virtio-serial channel."""

from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import quoteattr

AGENT_CHANNEL = "org.sova.agent.0"  # guest -> host reports
CONTROL_CHANNEL = "org.sova.control.0"  # host -> guest commands


@dataclass(frozen=True)
class GuestSpec:
    name: str
    index: int  # 1-based over the whole lab: fixes its MAC and address
    memory_mib: int
    kernel: str
    initrd: str
    disk: str

    @property
    def address(self) -> str:
        return f"10.77.1.{self.index}"

    @property
    def mac(self) -> str:
        return f"52:54:00:77:01:{self.index:02x}"


def domain_xml(g: GuestSpec) -> str:
    cmdline = f"console=ttyS0 quiet sova.name={g.name} sova.ip={g.address}/16"
    return f"""<domain type='qemu'>
  <name>{g.name}</name>
  <memory unit='MiB'>{g.memory_mib}</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>{g.kernel}</kernel>
    <initrd>{g.initrd}</initrd>
    <cmdline>{cmdline}</cmdline>
  </os>
  <features><acpi/><tcg><tb-cache unit='MiB'>32</tb-cache></tcg></features>
  <on_poweroff>destroy</on_poweroff>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2' cache='none'/>
      <source file={quoteattr(g.disk)}/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <interface type='bridge'>
      <mac address='{g.mac}'/>
      <source bridge='br0'/>
      <model type='virtio'/>
    </interface>
    <serial type='file'>
      <source path='/var/log/libvirt/qemu/{g.name}.console'/>
      <target port='0'/>
    </serial>
    <channel type='unix'>
      <source mode='bind'/>
      <target type='virtio' name='{AGENT_CHANNEL}'/>
    </channel>
    <channel type='unix'>
      <source mode='bind'/>
      <target type='virtio' name='{CONTROL_CHANNEL}'/>
    </channel>
    <memballoon model='virtio'><stats period='2'/></memballoon>
  </devices>
</domain>
"""
