"""SR-IOV VFs on real hosts: hot-plug of a VF (or the lab's emulated one) with its rate tier, and
its unplug, which waits for the guest's device-removed event in the background.

A part of ``LibvirtDriver`` (drivers/libvirt_driver.py): it reaches hosts and VMs through the driver's
``HostConnections``.
"""

from __future__ import annotations

import re
import time

from sova.drivers.libvirt_common import DEVICE_REMOVED_TIMEOUT, MAC_RE, Job, Refused, error_text
from sova.drivers.libvirt_hosts import HostConnections
from sova.drivers.vf import EmulatedVfs, SriovHost, emulated_xml, hostdev_xml, vf_mac


class VfOperations:
    def __init__(self, hosts: HostConnections, sriov: dict[str, SriovHost], emulated: EmulatedVfs | None):
        self.hosts = hosts
        self.sriov = sriov
        self.emulated = emulated

    def capacity(self, host: str) -> int:
        """VFs the host's NIC offers (the emulated count where it has no SR-IOV configuration)."""
        if host in self.sriov:
            return len(self.sriov[host].vfs)
        return self.emulated.count if self.emulated else 0

    def words(self, host: str, what: str) -> str:
        return f"VF {what}" if host in self.sriov else f"emulated VF {what} (a rate-limited virtio NIC, not SR-IOV)"

    @staticmethod
    def has_vf(xml: str, vf_macs: set[str]) -> bool:
        return any(m in vf_macs for m in MAC_RE.findall(xml))

    def is_vf_interface(self, xml: str, host: str, i: int, stats: dict, vf_macs: set[str]) -> bool:
        """Whether interface i is the (emulated) VF: its traffic bypasses the para-virtual path."""
        if self.emulated is None or host in self.sriov:
            return False  # a real VF never shows in the domain's net stats
        name = stats.get(f"net.{i}.name", "")
        for m in re.finditer(r"<interface type='bridge'>(.*?)</interface>", xml, re.S):
            if f"<target dev='{name}'/>" in m.group(1) and any(mac in m.group(1) for mac in vf_macs):
                return True
        return False

    def vnic_devices(self, dom, vm: str) -> list[str]:
        """The VM's para-virtual NICs' host devices (its VF left out)."""
        vf = vf_mac(self.hosts.vms[vm].index)
        out = []
        pattern = r"<interface type='(?:bridge|network|ethernet)'>(.*?)</interface>"
        for m in re.finditer(pattern, self.hosts.xml(dom), re.S):
            dev = re.search(r"<target dev='([^']+)'/>", m.group(1))
            if dev and vf not in m.group(1):
                out.append(dev.group(1))
        return out

    def attach(self, host: str, dom, vm: str, rate: float) -> None:
        """Hot-plug a free VF of the host (or an emulated one) into the VM, at `rate` bit/s."""
        st = self.hosts.vms[vm]
        mac = vf_mac(st.index)
        xml = self.hosts.xml(dom)
        if self.has_vf(xml, {mac}):
            raise Refused(f"{vm} already has a VF")
        live = self.hosts.flag("VIR_DOMAIN_AFFECT_LIVE", 1)
        if host in self.sriov:
            cfg = self.sriov[host]
            used = {s.vf_pci for n, s in self.hosts.vms.items() if self.hosts.where.get(n) == host and s.vf_pci}
            free = [p for p in cfg.vfs if p not in used]
            if not free:
                raise Refused(f"{host} has no free VF ({len(cfg.vfs)} in all)")
            standby = re.search(r"<alias name='(ua-[^']+)'/>", xml)
            dom.attachDeviceFlags(hostdev_xml(free[0], mac, standby.group(1) if standby else "ua-sova-net0"), live)
            st.vf_pci = free[0]
            cfg.set_rate(cfg.vfs.index(free[0]), rate)
        elif self.emulated is not None:
            dom.attachDeviceFlags(emulated_xml(mac, self.emulated.bridge, rate), live)
        else:
            raise Refused(f"{host} has no SR-IOV configuration and VF emulation is off")
        st.vf_rate = rate

    def set_rate(self, host: str, dom, vm: str, rate: float) -> None:
        """The VM's VF rate tier (bit/s)."""
        st = self.hosts.vms[vm]
        if host in self.sriov:
            if not st.vf_pci:
                raise Refused(f"{vm} has no VF")
            cfg = self.sriov[host]
            cfg.set_rate(cfg.vfs.index(st.vf_pci), rate)
        else:
            xml = self.hosts.xml(dom)
            m = re.search(rf"<mac address='{vf_mac(st.index)}'/>.*?<target dev='([^']+)'/>", xml, re.S)
            if m is None:
                raise Refused(f"{vm} has no VF")
            kib = max(1, round(rate / 8 / 1024)) if rate > 0 else 0
            live = self.hosts.flag("VIR_DOMAIN_AFFECT_LIVE", 1)
            dom.setInterfaceParameters(m.group(1), {"outbound.average": kib}, live)
        st.vf_rate = rate

    def detach_now(self, host: str, dom, vm: str) -> None:
        """Unplug the VM's VF and wait until it is gone from the live XML (detach may return early)."""
        st = self.hosts.vms[vm]
        mac = vf_mac(st.index)
        xml = self.hosts.xml(dom)
        m = re.search(
            rf"<interface type='(hostdev|bridge)'[^>]*>(?:(?!</interface>).)*?<mac address='{mac}'/>.*?</interface>",
            xml,
            re.S,
        )
        if m is None:
            return
        dom.detachDeviceFlags(m.group(0), self.hosts.flag("VIR_DOMAIN_AFFECT_LIVE", 1))
        deadline = time.monotonic() + DEVICE_REMOVED_TIMEOUT
        while self.has_vf(self.hosts.xml(dom), {mac}):  # fresh each time: the removal is what we wait for
            if time.monotonic() > deadline:
                raise RuntimeError(f"{vm}: the VF was not removed within {DEVICE_REMOVED_TIMEOUT:g} s")
            time.sleep(0.1)
        st.vf_pci = ""

    def detach_job(self, job: Job, host: str, vm: str) -> None:
        """A VF unplug in the background (the job's thread): done, or its error, in the job."""
        try:
            _, dom = self.hosts.dom(vm)
            self.detach_now(host, dom, vm)
            self.hosts.vms[vm].vf_rate = 0.0
        except Exception as e:
            job.error = error_text(e)
        job.done = True
