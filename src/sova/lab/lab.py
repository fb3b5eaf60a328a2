"""`sova lab`: a real multi-host libvirt lab on one machine (up, status, load, down).

Everything the lab makes is recorded in DIR/lab.json as soon as it exists, so that `down` (or an `up`
after a crash) can remove exactly that: daemons by PID, QEMU processes by the lab's image path,
namespaces, cgroups and files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path

from sova.drivers.guest_agent import GuestChannel
from sova.drivers.libvirt_driver import load_libvirt
from sova.lab import guest_image, hosts, install
from sova.lab.domain import AGENT_CHANNEL, CONTROL_CHANNEL, GuestSpec, domain_xml
from sova.lab.errors import LabError
from sova.lab.hosts import Host
from sova.model.scenario import TopologySpec

DEFAULT_DIR = Path("/var/lib/sova-lab")
GUEST_MEMORY_MIB = 128  # the notes: 80 MiB at least, 96-128 fine
DISK_SIZE = "64M"
LAB_LINK_BANDWIDTH = hosts.LINK_MBIT * 1e6  # bit/s of each host's port (a tbf on its veth)
LOAD_KEYS = ("cpu", "net", "paced", "disk")
LAB_ENTRIES = ("hosts", "disks", "image", "lab.tmp", "lab.json")  # everything `up` creates in DIR


@dataclass
class Vm:
    name: str
    index: int
    home: str  # the host it was booted on
    disk: str


@dataclass
class LabState:
    dir: str
    lab_id: str
    fabric_ns: str
    hosts: list[Host] = field(default_factory=list)
    vms: list[Vm] = field(default_factory=list)

    def save(self) -> None:
        data = asdict(self)
        data["hosts"] = [{**asdict(host), "dir": str(host.dir)} for host in self.hosts]
        path = Path(self.dir) / "lab.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)

    @classmethod
    def load(cls, lab_dir: Path) -> LabState | None:
        path = lab_dir / "lab.json"
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text())
            return cls(
                dir=data["dir"],
                lab_id=data["lab_id"],
                fabric_ns=data["fabric_ns"],
                hosts=[Host(**{**host, "dir": Path(host["dir"])}) for host in data["hosts"]],
                vms=[Vm(**vm) for vm in data["vms"]],
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise LabError(f"{path} is not a lab state file ({exc}); remove it by hand if nothing runs") from exc

    def host(self, name: str) -> Host:
        for host in self.hosts:
            if host.name == name:
                return host
        raise LabError(f"no host {name!r} in the lab (hosts: {', '.join(lab_host.name for lab_host in self.hosts)})")


def lab_id_for(lab_dir: Path) -> str:
    """Namespace and cgroup prefix: short (interface names are at most 15 bytes) and per directory."""
    return "sl" + hashlib.sha1(str(lab_dir.resolve()).encode()).hexdigest()[:6]


class Lab:
    """One lab directory and what runs from it."""

    def __init__(self, lab_dir: Path = DEFAULT_DIR, say: Callable[[str], None] = print):
        self.dir = lab_dir.resolve()
        self.say = say

    # ------------------------------------------------------------------ up
    def up(
        self, n_hosts: int = 2, vms_per_host: int = 2, install_missing: bool = True, written_disks: bool = False
    ) -> LabState:
        """Start the lab. Guest disks are empty qcow2 files unless `written_disks`: a read of an unallocated
        cluster is answered by QEMU with zeros and never reaches the machine's disk, so a guest that is to
        be disk-bound needs its disk written (preallocated in full: DISK_SIZE of zeros on the machine's
        disk per guest)."""
        if not 1 <= n_hosts <= 16:
            raise LabError(f"--hosts must be 1-16, got {n_hosts}")
        if not 0 <= vms_per_host <= 16:
            raise LabError(f"--vms-per-host must be 0-16, got {vms_per_host}")
        install.ensure(install_missing, say=self.say)
        if LabState.load(self.dir) is not None or self._leftovers():
            self.say(f"cleaning up an earlier lab in {self.dir}")
            self.down()
        self.dir.mkdir(parents=True, exist_ok=True)
        lab_id = lab_id_for(self.dir)
        state = LabState(str(self.dir), lab_id, f"{lab_id}-fab")
        state.save()
        try:
            self._up(state, n_hosts, vms_per_host, written_disks)
        except BaseException:
            self.say("start-up failed: removing what was made")
            self.down()
            raise
        return state

    def _up(self, state: LabState, n_hosts: int, vms_per_host: int, written_disks: bool) -> None:
        t0 = time.monotonic()
        kernel, initrd = guest_image.build(self.dir / "image")
        self.say(f"guest image ready ({time.monotonic() - t0:.1f} s)")
        hosts.make_fabric(state.fabric_ns)
        tc = resources.files("sova.lab") / "host" / "tc"
        for i in range(1, n_hosts + 1):
            host = Host(f"host{i}", i, f"{state.lab_id}-h{i}", self.dir / "hosts" / f"host{i}", hosts.host_address(i))
            state.hosts.append(host)
            state.save()
            host.dir.mkdir(parents=True, exist_ok=True)
            hosts.make_host_network(host, state.fabric_ns, n_hosts)
            hosts.write_config(host, Path(str(tc)))
            host.pid = hosts.start_daemon(host, state.lab_id)
            state.save()
        with ThreadPoolExecutor(len(state.hosts)) as ex:
            list(ex.map(hosts.wait_daemon, state.hosts))
        self.say(f"{n_hosts} libvirtd hosts answer ({time.monotonic() - t0:.1f} s)")
        disks = self.dir / "disks"
        disks.mkdir(exist_ok=True)
        specs = []
        for host in state.hosts:
            for _ in range(vms_per_host):
                idx = len(specs) + 1
                disk = disks / f"vm{idx}.qcow2"
                full = ["-o", "preallocation=full"] if written_disks else []
                hosts.run(["qemu-img", "create", "-q", "-f", "qcow2", *full, str(disk), DISK_SIZE])
                specs.append((host, GuestSpec(f"vm{idx}", idx, GUEST_MEMORY_MIB, str(kernel), str(initrd), str(disk))))
                state.vms.append(Vm(f"vm{idx}", idx, host.name, str(disk)))
        state.save()
        for host, spec in specs:
            with _conn(host) as conn:
                conn.defineXML(domain_xml(spec)).create()
        self.wait_agents(state, timeout=120)
        self.say(f"{len(specs)} guests report ({time.monotonic() - t0:.1f} s)")

    def _leftovers(self) -> bool:
        return any(pid for pid in _qemu_pids(self.dir))

    # ------------------------------------------------------------------ queries
    def state(self) -> LabState:
        state = LabState.load(self.dir)
        if state is None:
            raise LabError(f"no lab in {self.dir} (start one with `sova lab up --dir {self.dir}`)")
        return state

    def where(self, state: LabState) -> dict[str, tuple[str, str]]:
        """VM name -> (host name, libvirt state) for every lab VM; mid-migration, where it runs."""
        libvirt = load_libvirt()

        out: dict[str, tuple[str, str]] = {}
        for host in state.hosts:
            try:
                with _conn(host) as conn:
                    for dom in conn.listAllDomains():
                        st = _STATES.get(dom.state()[0], "unknown")
                        if dom.name() not in out or st == "running":
                            out[dom.name()] = (host.name, st)
            except LabError:
                continue
            except libvirt.libvirtError:
                continue
        return out

    def channel(self, state: LabState, vm: str, name: str = AGENT_CHANNEL) -> GuestChannel:
        """A channel of a VM's agent (reports by default, or CONTROL_CHANNEL for commands) on the
        host it runs on now."""
        host_name = self.where(state).get(vm, (None, None))[0]
        if host_name is None:
            raise LabError(f"VM {vm!r} does not run on any lab host")
        host = state.host(host_name)
        with _conn(host) as conn:
            path = channel_socket(conn.lookupByName(vm).XMLDesc(), name)
        return GuestChannel(str(host.local_path(path)))

    def wait_agents(self, state: LabState, timeout: float = 60.0) -> None:
        pending = {vm.name: self.channel(state, vm.name) for vm in state.vms}
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            for name, ch in list(pending.items()):
                if ch.poll() is not None:
                    ch.close()
                    del pending[name]
            time.sleep(0.3)
        if pending:
            raise LabError(f"no report within {timeout:.0f} s from the guest agents of {', '.join(sorted(pending))}")

    def status(self) -> list[str]:
        state = self.state()
        lines = []
        placed = self.where(state)
        for host in state.hosts:
            alive = "up" if hosts.pid_alive(host.pid) else "DOWN"
            vms = sorted(vm_name for vm_name, (hn, _) in placed.items() if hn == host.name)
            lines.append(f"{host.name}  {alive:4}  {host.uri}  vms: {', '.join(vms) or '-'}")
        for vm in state.vms:
            hn, st = placed.get(vm.name, ("-", "not running"))
            lines.append(f"  {vm.name}  10.77.1.{vm.index}  on {hn}  {st}  (booted on {vm.home})")
        return lines

    def load(self, vm: str, settings: list[str]) -> str:
        """Set the load a guest runs: cpu=PCT, net=VM:PCT, paced=VM:MBIT, disk=IOPS|max (an empty list stops it)."""
        state = self.state()
        command = load_command(vm, settings, {lab_vm.name: f"10.77.1.{lab_vm.index}" for lab_vm in state.vms})
        ch = self.channel(state, vm, CONTROL_CHANNEL)
        try:
            if not ch.send(command):
                raise LabError(f"the control channel of {vm} is not reachable now")
        finally:
            ch.close()
        return command.removeprefix("load").strip() or "idle"

    # ------------------------------------------------------------------ down
    def crash(self, host: str) -> list[int]:
        """Stop a host as a power loss would: every process of its cgroup (its daemon, its guests' QEMUs)
        killed at once; returns their PIDs once they are gone. Its disks stay on the shared file system."""
        state = self.state()
        lab_host = state.host(host)
        group = Path("/sys/fs/cgroup/cpuacct") / f"{state.lab_id}-{lab_host.name}"
        pids = sorted(
            {int(pid_text) for procs_file in group.rglob("cgroup.procs") for pid_text in procs_file.read_text().split()}
        )
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in pids:
            hosts.stop_pid(pid, timeout=10)  # gone (reaped if ours) by now or soon
        return pids

    def down(self) -> None:
        """Stop and remove everything the lab in this directory made; safe to run twice."""
        state = LabState.load(self.dir)
        lab_id = state.lab_id if state else lab_id_for(self.dir)
        for pid in _qemu_pids(self.dir):
            hosts.stop_pid(pid, timeout=5)
        if state:
            for host in state.hosts:
                hosts.stop_pid(host.pid)
        for pid in _daemon_pids(self.dir):
            hosts.stop_pid(pid)
        survivors = _qemu_pids(self.dir) + _daemon_pids(self.dir)  # e.g. started while we stopped others
        for pid in survivors:
            hosts.stop_pid(pid, timeout=5)
        if left := _qemu_pids(self.dir) + _daemon_pids(self.dir):
            raise LabError(f"processes of the lab in {self.dir} keep coming back: {', '.join(map(str, left))}")
        for ns in _lab_netns(lab_id):
            hosts.run(["ip", "netns", "del", ns], check=False)
        for controller in hosts.CGROUP_CONTROLLERS:
            base = Path("/sys/fs/cgroup") / controller
            for cgroup in base.glob(f"{lab_id}-*"):
                _remove_cgroup(cgroup)
        for name in LAB_ENTRIES:  # only what the lab made: DIR may be a directory the user keeps other things in
            path = self.dir / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.dir.rmdir()  # only if nothing else is in it


_STATES = {
    0: "no state",
    1: "running",
    2: "blocked",
    3: "paused",
    4: "shutting down",
    5: "shut off",
    6: "crashed",
    7: "suspended",
}


def load_command(vm: str, settings: list[str], addresses: dict[str, str]) -> str:
    """The agent's ``load ...`` line for `sova lab load VM SETTINGS`, with peers resolved to addresses."""
    if vm not in addresses:
        raise LabError(f"no VM {vm!r} in the lab ({', '.join(addresses)})")
    parts = []
    for setting in settings:
        key, sep, val = setting.partition("=")
        if not sep or key not in LOAD_KEYS:
            raise LabError(f"load setting {setting!r}: expected cpu=PCT, net=VM:PCT, paced=VM:MBIT or disk=IOPS|max")
        if key in ("net", "paced"):
            peer, _, amount = val.rpartition(":")
            if peer not in addresses or peer == vm:
                raise LabError(f"load setting {setting!r}: {peer!r} is not another lab VM ({', '.join(addresses)})")
            val = f"{addresses[peer]}:{_percent(setting, amount) if key == 'net' else _mbit(setting, amount)}"
        elif key == "cpu":
            val = str(_percent(setting, val))
        elif val != "max" and not (val.isdigit() and int(val) > 0):
            raise LabError(f"load setting {setting!r}: disk takes a positive request rate per second or max")
        parts.append(f"{key}={val}")
    return " ".join(["load", *parts])


def _mbit(setting: str, text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise LabError(f"load setting {setting!r}: expected a rate of 1-1000 Mbit/s, got {text!r}")
    return int(text)


def _percent(setting: str, text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 100:
        raise LabError(f"load setting {setting!r}: expected a percentage 0-100, got {text!r}")
    return int(text)


def channel_socket(xml: str, name: str) -> str:
    """A channel's socket path in a live domain's XML."""
    match = re.search(rf"<source mode='bind' path='([^']+/{re.escape(name)})'/>", xml)
    if match is None:
        raise LabError(f"the domain has no {name} channel")
    return match.group(1)


@contextlib.contextmanager
def _conn(h: Host):
    libvirt = load_libvirt()

    try:
        conn = libvirt.open(h.uri)
    except libvirt.libvirtError as exc:
        raise LabError(f"cannot reach libvirtd of {h.name} at {h.uri}: {exc}") from exc
    try:
        yield conn
    finally:
        with contextlib.suppress(libvirt.libvirtError):
            conn.close()


def _proc_cmdlines():
    for proc_dir in Path("/proc").iterdir():
        if proc_dir.name.isdigit():
            try:
                yield int(proc_dir.name), (proc_dir / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue


def _qemu_pids(lab_dir: Path) -> list[int]:
    """QEMU processes booted from this lab's image (they outlive a killed libvirtd)."""
    needle = str(lab_dir / "image").encode()
    return [
        pid for pid, cmd in _proc_cmdlines() if cmd and b"qemu-system" in cmd[0] and any(needle in arg for arg in cmd)
    ]


def _daemon_pids(lab_dir: Path) -> list[int]:
    needle = str(lab_dir / "hosts").encode()
    return [pid for pid, cmd in _proc_cmdlines() if cmd and any(needle in arg for arg in cmd) and pid != os.getpid()]


def _lab_netns(lab_id: str) -> list[str]:
    result = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return [ln.split()[0] for ln in result.stdout.splitlines() if ln.startswith(f"{lab_id}-")]


def _remove_cgroup(g: Path) -> None:
    """Remove a cgroup directory bottom-up (libvirt makes machine/... below it); move stray tasks up."""
    for sub in sorted((path for path in g.rglob("*") if path.is_dir()), key=lambda path: -len(path.parts)):
        _evacuate(sub)
        with contextlib.suppress(OSError):
            sub.rmdir()
    _evacuate(g)
    with contextlib.suppress(OSError):
        g.rmdir()


def _evacuate(g: Path) -> None:
    root = g
    while root.parent != Path("/sys/fs/cgroup"):
        root = root.parent
    with contextlib.suppress(OSError):
        for pid in (g / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                (root / "cgroup.procs").write_text(pid)


def driver_settings(lab_dir: Path) -> tuple[dict[str, str], dict]:
    """The running lab in `lab_dir` as LibvirtDriver takes it: its hosts by name -> URI, and the options."""
    state = Lab(lab_dir).state()
    return {host.name: host.uri for host in state.hosts}, driver_options(state)


def lab_topology() -> TopologySpec:
    """The lab's fabric: one bridge, each host's port shaped to the lab's link speed."""
    return TopologySpec(kind="single-switch", link_speed=LAB_LINK_BANDWIDTH)


def driver_options(state: LabState) -> dict:
    """Keyword arguments for LibvirtDriver that fit this lab: agent sockets and uplink counters read
    through the host's directories and namespace, VFs emulated, migrations of disks on one file system."""
    from sova.drivers.flow_counters import FlowCounterHost, FlowCounters
    from sova.drivers.host_command import HostCommand
    from sova.drivers.vf import EmulatedVfs

    by_name = {lab_host.name: lab_host for lab_host in state.hosts}

    def guest_socket(host: str, path: str) -> str | None:
        lab_host = by_name.get(host)
        return str(lab_host.local_path(path)) if lab_host else None

    def host_nic(host: str) -> tuple[int, int] | None:
        lab_host = by_name.get(host)
        if lab_host is None:
            return None
        result = subprocess.run(
            ["ip", "-n", lab_host.netns, "-s", "-j", "link", "show", "uplink"], capture_output=True, text=True
        )
        try:
            stats = json.loads(result.stdout)[0]["stats64"]
        except (ValueError, IndexError, KeyError):
            return None
        return int(stats["rx"]["bytes"]), int(stats["tx"]["bytes"])

    def host_cpu(host: str) -> tuple[float, int] | None:
        """The host's own CPU: its cgroup (libvirtd and its QEMUs), against the machine's cores."""
        try:
            usage = (Path("/sys/fs/cgroup/cpuacct") / f"{state.lab_id}-{host}" / "cpuacct.usage").read_text()
        except OSError:
            return None
        return int(usage) * 1e-9, os.cpu_count() or 1

    flows = {
        lab_host.name: FlowCounterHost(HostCommand(("ip", "netns", "exec", lab_host.netns))) for lab_host in state.hosts
    }
    return {
        "flows": FlowCounters(flows),  # nftables counters on each host's br0, at the guests' taps
        "guest_socket": guest_socket,
        "host_nic": host_nic,
        "host_cpu": host_cpu,
        "emulated_vfs": EmulatedVfs(count=2, bridge="br0", bandwidth=LAB_LINK_BANDWIDTH),
        "unsafe_migration": True,  # the disks are files on one local file system that every lab host sees
        "shared_disks": True,  # so a failed host's VMs can be booted on another
    }
