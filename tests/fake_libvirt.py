"""A fake libvirt connection for unit tests: the calls the driver makes, recorded, with failures on demand."""

from __future__ import annotations

from sova.drivers.libvirt_driver import LibvirtDriver


class FakeError(Exception):
    pass


class FakeDom:
    def __init__(self, name: str, conn: FakeConn, stats: dict | None = None):
        self._name = name
        self.conn = conn
        self.stats = {
            "state.state": 1,
            "cpu.time": 2_000_000_000,
            "vcpu.current": 2,
            "vcpu.0.delay": 100_000_000,
            "vcpu.1.delay": 50_000_000,
            "net.count": 1,
            "net.0.name": "vnet0",
            "net.0.rx.bytes": 1000,
            "net.0.tx.bytes": 3000,
            "net.0.rx.pkts": 10,
            "net.0.tx.pkts": 30,
            "block.count": 1,
            "block.0.rd.reqs": 7,
            "block.0.wr.reqs": 3,
            "block.0.rd.bytes": 4096,
            "block.0.wr.bytes": 512,
            "block.0.rd.times": 1_000_000,
            "block.0.wr.times": 2_000_000,
            "balloon.maximum": 131072,
            "balloon.available": 100000,
            "balloon.usable": 60000,
            **(stats or {}),
        }
        self.devices: list[str] = []
        self.mac = "52:54:00:00:00:01"  # its vNIC's
        self.outbound = 0  # its vNIC's libvirt outbound average, KiB/s (0: no limit)
        self.disk_type = "file"  # libvirt's <disk type=...>: file or block (local), network (iSCSI, RBD)
        xen = getattr(conn, "kind", "QEMU") == "Xen"  # Xen's credit scheduler, else KVM's cgroup shares
        self.sched = {"weight": 256, "cap": 0} if xen else {"cpu_shares": 1024, "vcpu_period": 100000, "vcpu_quota": -1}
        self.calls: list[tuple] = []
        self.migrate_error: Exception | None = None
        self.paused_after_failure = False

    def name(self):
        return self._name

    def XMLDesc(self, flags=0):
        return (
            f"<domain><name>{self._name}</name><devices><disk type='{self.disk_type}' device='disk'><target dev='vda' bus='virtio'/></disk>"
            f"<interface type='bridge'><mac address='{self.mac}'/><target dev='vnet0'/>"
            + (f"<bandwidth><outbound average='{self.outbound}'/></bandwidth>" if self.outbound else "")
            + "<alias name='ua-net0'/></interface>"
            + "".join(self.devices)
            + "</devices></domain>"
        )

    def info(self):
        return [1, 131072, 131072, self.stats["vcpu.current"], 0]

    def state(self):
        return [3 if self.paused_after_failure else 1, 1]

    def create(self):
        self.calls.append(("create",))
        self.stats["state.state"] = 1

    def resume(self):
        self.calls.append(("resume",))
        self.paused_after_failure = False

    def schedulerParametersFlags(self, flags=0):
        return dict(self.sched)

    def schedulerParameters(self):
        return dict(self.sched)

    def setSchedulerParametersFlags(self, params, flags):
        self.calls.append(("sched", params))
        self.sched.update(params)

    def setBlockIoTune(self, disk, params, flags):
        self.calls.append(("iotune", disk, params))

    def setInterfaceParameters(self, dev, params, flags):
        self.calls.append(("bandwidth", dev, params))
        if dev == "vnet0" and "outbound.average" in params:
            self.outbound = params["outbound.average"]

    def attachDeviceFlags(self, xml, flags):
        self.calls.append(("attach", xml))
        self.devices.append(xml)

    def detachDeviceFlags(self, xml, flags):
        self.calls.append(("detach", xml))
        self.devices = [d for d in self.devices if d != xml]

    def startDirtyRateCalc(self, seconds, flags):
        self.calls.append(("dirtyrate", seconds))

    def migrate3(self, dconn, params, flags):
        self.calls.append(("migrate3", dconn.uri, flags))
        if self.migrate_error is not None:
            self.paused_after_failure = True
            raise self.migrate_error
        self.conn.doms.pop(self._name)
        dconn.doms[self._name] = self
        self.conn = dconn
        return self

    def jobStats(self, flags=0):
        return {"downtime": 20, "data_processed": 90_000_000}

    def abortJob(self):
        self.calls.append(("abort",))


class FakeConn:
    def __init__(self, uri: str, doms: dict[str, FakeDom] | None = None, kind: str = "QEMU"):
        self.uri = uri
        self.doms = doms or {}
        self.alive = True
        self.kind = kind  # "QEMU" (KVM) or "Xen"
        self.dom0 = FakeDom("Domain-0", self)
        self.dom0.sched = {"weight": 256, "cap": 0}

    def getType(self):
        return self.kind

    def lookupByID(self, ident):
        if ident != 0 or self.kind != "Xen":
            raise FakeError(f"Domain not found: no domain with matching id {ident}")
        return self.dom0

    def isAlive(self):
        return self.alive

    def close(self):
        self.alive = False

    def getInfo(self):
        return ["x86_64", 8192, 4, 2000, 1, 1, 4, 1]

    def getCPUStats(self, cpu):
        return {"kernel": 3_000_000_000, "user": 5_000_000_000, "idle": 1, "iowait": 0}

    def getAllDomainStats(self, stats, flags):
        return [(d, dict(d.stats)) for d in self.doms.values()]

    def defineXML(self, xml):
        """Define (or redefine) a domain from its XML; it is shut off until create()."""
        name = xml.split("<name>", 1)[1].split("</name>", 1)[0]
        dom = self.doms.get(name) or FakeDom(name, self, {"state.state": 5})
        self.doms[name] = dom
        dom.calls.append(("defineXML", xml))
        return dom

    def lookupByName(self, name):
        if name not in self.doms:
            raise FakeError(f"Domain not found: no domain with matching name '{name}'")
        return self.doms[name]


class Cluster:
    """Two fake hosts whose connections survive reopening (a daemon restart keeps its domains)."""

    def __init__(self):
        self.conns = {"fake://a": FakeConn("fake://a"), "fake://b": FakeConn("fake://b")}
        self.down: set[str] = set()
        self.opened: list[str] = []

    def open(self, uri):
        self.opened.append(uri)
        if uri in self.down:
            raise FakeError(f"Failed to connect socket to '{uri}': Connection refused")
        c = self.conns[uri]
        c.alive = True
        return c

    def add(self, uri, name, **stats):
        d = FakeDom(name, self.conns[uri], stats)
        self.conns[uri].doms[name] = d
        return d


def make(cluster: Cluster, **kw) -> LibvirtDriver:
    return LibvirtDriver({"a": "fake://a", "b": "fake://b"}, open_conn=cluster.open, dirty_rate_every=0, **kw)


class FakeChannel:
    """A guest agent's channel whose report a test sets; the paths of those closed are in `closed`."""

    closed: list[str] = []

    def __init__(self, path):
        self.path, self.latest, self.answers = path, None, []

    def poll(self):
        return self.latest

    def close(self):
        FakeChannel.closed.append(self.path)


def with_fake_channels(monkeypatch) -> list[str]:
    """The libvirt driver's guest channels replaced by FakeChannel; returns the list of paths it closes."""
    import sova.drivers.libvirt_driver as mod

    monkeypatch.setattr(FakeChannel, "closed", [])
    monkeypatch.setattr(mod, "GuestChannel", FakeChannel)
    return FakeChannel.closed
