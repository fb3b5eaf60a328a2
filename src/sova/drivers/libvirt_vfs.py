"""SR-IOV VFs on real hosts: hot-plug of a VF (or the lab's emulated one) with its rate tier, and
its unplug, which waits for the guest's device-removed event in the background.

A part of ``LibvirtDriver`` (drivers/libvirt_driver.py), which holds the connections and state.
"""

from __future__ import annotations

import re
import time

from sova.drivers.libvirt_common import DEVICE_REMOVED_TIMEOUT, _Job, _msg, _Refused
from sova.drivers.vf import emulated_xml, hostdev_xml, vf_mac


class VfOperations:
    """SR-IOV VFs on real hosts: hot-plug of a VF (or the lab's emulated one) with its rate tier, and"""

    def _vf_words(self, host: str, what: str) -> str:
        return f"VF {what}" if host in self.sriov else f"emulated VF {what} (a rate-limited virtio NIC, not SR-IOV)"

    def _vnic_devices(self, dom, vm: str) -> list[str]:
        vf = vf_mac(self._vm[vm].index)
        out = []
        for m in re.finditer(r"<interface type='(?:bridge|network|ethernet)'>(.*?)</interface>", self._xml(dom), re.S):
            dev = re.search(r"<target dev='([^']+)'/>", m.group(1))
            if dev and vf not in m.group(1):
                out.append(dev.group(1))
        return out

    def _attach_vf(self, host: str, dom, vm: str, rate: float) -> None:
        st = self._vm[vm]
        mac = vf_mac(st.index)
        xml = self._xml(dom)
        if self._has_vf(xml, {mac}):
            raise _Refused(f"{vm} already has a VF")
        live = self._flag("VIR_DOMAIN_AFFECT_LIVE", 1)
        if host in self.sriov:
            cfg = self.sriov[host]
            used = {s.vf_pci for n, s in self._vm.items() if self._where.get(n) == host and s.vf_pci}
            free = [p for p in cfg.vfs if p not in used]
            if not free:
                raise _Refused(f"{host} has no free VF ({len(cfg.vfs)} in all)")
            standby = re.search(r"<alias name='(ua-[^']+)'/>", xml)
            dom.attachDeviceFlags(hostdev_xml(free[0], mac, standby.group(1) if standby else "ua-sova-net0"), live)
            st.vf_pci = free[0]
            cfg.set_rate(cfg.vfs.index(free[0]), rate)
        elif self.emulated is not None:
            dom.attachDeviceFlags(emulated_xml(mac, self.emulated.bridge, rate), live)
        else:
            raise _Refused(f"{host} has no SR-IOV configuration and VF emulation is off")
        st.vf_rate = rate

    def _set_vf_rate(self, host: str, dom, vm: str, rate: float) -> None:
        st = self._vm[vm]
        if host in self.sriov:
            if not st.vf_pci:
                raise _Refused(f"{vm} has no VF")
            cfg = self.sriov[host]
            cfg.set_rate(cfg.vfs.index(st.vf_pci), rate)
        else:
            xml = self._xml(dom)
            m = re.search(rf"<mac address='{vf_mac(st.index)}'/>.*?<target dev='([^']+)'/>", xml, re.S)
            if m is None:
                raise _Refused(f"{vm} has no VF")
            kib = max(1, round(rate / 8 / 1024)) if rate > 0 else 0
            dom.setInterfaceParameters(m.group(1), {"outbound.average": kib}, self._flag("VIR_DOMAIN_AFFECT_LIVE", 1))
        st.vf_rate = rate

    def _detach_vf_now(self, host: str, dom, vm: str) -> None:
        """Unplug the VM's VF and wait until it is gone from the live XML (detach may return early)."""
        st = self._vm[vm]
        mac = vf_mac(st.index)
        xml = self._xml(dom)
        m = re.search(
            rf"<interface type='(hostdev|bridge)'[^>]*>(?:(?!</interface>).)*?<mac address='{mac}'/>.*?</interface>",
            xml,
            re.S,
        )
        if m is None:
            return
        dom.detachDeviceFlags(m.group(0), self._flag("VIR_DOMAIN_AFFECT_LIVE", 1))
        deadline = time.monotonic() + DEVICE_REMOVED_TIMEOUT
        while self._has_vf(self._xml(dom), {mac}):  # fresh each time: the removal is what we wait for
            if time.monotonic() > deadline:
                raise RuntimeError(f"{vm}: the VF was not removed within {DEVICE_REMOVED_TIMEOUT:g} s")
            time.sleep(0.1)
        st.vf_pci = ""

    def _detach_job(self, job: _Job, host: str, vm: str) -> None:
        try:
            _, dom = self._dom(vm)
            self._detach_vf_now(host, dom, vm)
            self._vm[vm].vf_rate = 0.0
        except Exception as e:
            job.error = _msg(e)
        job.done = True
