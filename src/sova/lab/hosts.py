"""Lab hosts: one libvirtd per "host", each in its own network, mount and cgroup namespace.

A fabric namespace holds bridge ``fab0``; each host namespace has a veth to it, enslaved with the
guests' taps to the host's bridge ``br0``, so hosts and guests share one private L2 segment
(10.77.0.0/16) that never leaves the lab's namespaces. libvirt's compiled-in state directories are
bind-mounted per host, and each daemon gets its own cgroup subtree and a distinct host UUID: libvirt
refuses to migrate to "the same host" and two daemons would otherwise collide on cgroup paths.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from sova.lab.errors import LabError

LINK_MBIT = 100  # each host's port to the fabric
CGROUP_CONTROLLERS = ("cpu", "cpuacct", "blkio")
LIBVIRT_DIRS = {  # per-host directory name -> the compiled-in path it replaces
    "etc": "/etc/libvirt",
    "run": "/run/libvirt",
    "lib": "/var/lib/libvirt",
    "cache": "/var/cache/libvirt",
    "log": "/var/log/libvirt",
}


@dataclass
class Host:
    """One lab host as recorded in the lab's state file."""

    name: str
    index: int  # 1-based
    netns: str
    dir: Path
    address: str
    pid: int = 0

    @property
    def uri(self) -> str:
        return f"qemu:///system?socket={self.dir}/run/libvirt-sock"

    @property
    def tcp_uri(self) -> str:
        """Where peer-to-peer migration reaches this host's daemon from another lab host."""
        return f"qemu+tcp://{self.address}/system"

    def local_path(self, path: str) -> Path:
        """Where a path inside this host's libvirt directories lies in the root mount namespace."""
        for key, target in LIBVIRT_DIRS.items():
            if path == target or path.startswith(target + "/"):
                return self.dir / key / path[len(target) + 1 :]
        return Path(path)


def run(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise LabError(f"`{' '.join(cmd)}` failed: {(r.stderr or r.stdout).strip()[-300:]}")
    return r


def host_address(index: int) -> str:
    return f"10.77.0.{index}"


def host_mac(index: int) -> str:
    """A fixed address for a host's bridge: left to itself a bridge takes its lowest port's address, which
    changes as guests' taps come and go (a migration), leaving the other hosts' ARP entries stale."""
    return f"02:77:00:00:00:{index:02x}"


def make_fabric(fabric_ns: str) -> None:
    run(["ip", "netns", "add", fabric_ns])
    run(["ip", "-n", fabric_ns, "link", "add", "fab0", "type", "bridge"])
    run(["ip", "-n", fabric_ns, "link", "set", "fab0", "up"])
    run(["ip", "-n", fabric_ns, "link", "set", "lo", "up"])


def make_host_network(host: Host, fabric_ns: str, n_hosts: int) -> None:
    """The host's bridge with a fixed address and permanent neighbour entries for every other host, so that
    hosts reach each other (migration, peer-to-peer libvirt) without ARP, even on a saturated port."""
    ns = host.netns
    run(["ip", "netns", "add", ns])
    port = f"h{host.index}"
    run(["ip", "-n", fabric_ns, "link", "add", port, "type", "veth", "peer", "name", "uplink", "netns", ns])
    run(["ip", "-n", fabric_ns, "link", "set", port, "master", "fab0", "up"])
    for cmd in (
        ["link", "set", "lo", "up"],
        ["link", "add", "br0", "address", host_mac(host.index), "type", "bridge"],
        ["link", "set", "uplink", "master", "br0", "up"],
        ["addr", "add", f"{host.address}/16", "dev", "br0"],
        ["link", "set", "br0", "up"],
    ):
        run(["ip", "-n", ns, *cmd])
    for other in range(1, n_hosts + 1):
        if other != host.index:
            neighbour = ["neigh", "replace", host_address(other), "lladdr", host_mac(other)]
            run(["ip", "-n", ns, *neighbour, "dev", "br0", "nud", "permanent"])
    # the host's port has a line rate, both ways, so that a host can be network-hot as in the papers
    for netns, dev in ((ns, "uplink"), (fabric_ns, port)):
        run(
            [
                "tc",
                "-n",
                netns,
                "qdisc",
                "add",
                "dev",
                dev,
                "root",
                "tbf",
                "rate",
                f"{LINK_MBIT}mbit",
                "burst",
                "64kb",
                "latency",
                "50ms",
            ]
        )


def write_config(host: Host, tc_wrapper: Path) -> None:
    for key in LIBVIRT_DIRS:
        (host.dir / key).mkdir(parents=True, exist_ok=True)
    for sub in ("lib/qemu", "lib/images", "log/qemu", "run/qemu"):
        (host.dir / sub).mkdir(parents=True, exist_ok=True)
    (host.dir / "etc" / "libvirtd.conf").write_text(
        "listen_tls = 0\nlisten_tcp = 1\n"
        f'listen_addr = "{host.address}"\n'
        'auth_tcp = "none"\nauth_unix_rw = "none"\nauth_unix_ro = "none"\n'
        f'host_uuid = "{uuid.uuid5(uuid.NAMESPACE_URL, str(host.dir))}"\n'
        'log_outputs = "3:file:/var/log/libvirt/libvirtd.log"\n'
    )
    (host.dir / "etc" / "qemu.conf").write_text(
        'user = "root"\ngroup = "root"\ndynamic_ownership = 0\nremember_owner = 0\n'
        'security_driver = "none"\nstdio_handler = "file"\n'
        'cgroup_controllers = [ "cpu", "cpuacct", "blkio" ]\n'
        f'migration_address = "{host.address}"\nmigration_host = "{host.address}"\n'
    )
    bin_dir = host.dir / "bin"
    bin_dir.mkdir(exist_ok=True)
    tc = bin_dir / "tc"
    tc.unlink(missing_ok=True)
    tc.symlink_to(tc_wrapper)


def cgroup_dirs(lab_id: str, host: Host) -> list[Path]:
    return [Path("/sys/fs/cgroup") / c / f"{lab_id}-{host.name}" for c in CGROUP_CONTROLLERS]


def start_daemon(host: Host, lab_id: str) -> int:
    """Start libvirtd inside the host's namespaces; return its PID (it never forks away)."""
    groups = cgroup_dirs(lab_id, host)
    for g in groups:
        if not g.parent.is_dir():
            raise LabError(f"cgroup v1 controller {g.parent} is not mounted; the lab needs cpu, cpuacct and blkio")
        g.mkdir(exist_ok=True)
    mounts = " && ".join(
        ["mount -t tmpfs cgroups /sys/fs/cgroup"]
        + [
            f"mkdir -p /sys/fs/cgroup/{c} && mount -t cgroup -o {c} cgroup /sys/fs/cgroup/{c}"
            for c in CGROUP_CONTROLLERS
        ]
        + [f"mkdir -p {t} && mount --bind {host.dir / k} {t}" for k, t in LIBVIRT_DIRS.items()]
    )
    inner = f"{mounts} && exec env PATH={host.dir / 'bin'}:$PATH libvirtd --listen -f /etc/libvirt/libvirtd.conf -p /run/libvirt/libvirtd.pid"
    join = " && ".join(f"echo $$ > {g}/cgroup.procs" for g in groups)
    outer = f"{join} && exec ip netns exec {host.netns} unshare --mount --propagation private --cgroup sh -c '{inner}'"
    log = open(host.dir / "libvirtd.out", "ab")  # noqa: SIM115 - handed to the daemon
    proc = subprocess.Popen(
        ["sh", "-c", outer], stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
    )
    log.close()
    return proc.pid


def wait_daemon(host: Host, timeout: float = 60.0) -> None:
    """Wait until the daemon answers on its socket; fail with its log if it died."""
    from sova.drivers.libvirt_driver import load_libvirt

    libvirt = load_libvirt()

    deadline = time.monotonic() + timeout
    sock = host.dir / "run" / "libvirt-sock"
    while time.monotonic() < deadline:
        if not pid_alive(host.pid):
            tail = (host.dir / "libvirtd.out").read_text(errors="replace")[-600:]
            raise LabError(f"libvirtd of {host.name} exited: {tail.strip()}")
        if sock.exists():
            try:
                conn = libvirt.open(host.uri)
                conn.getCapabilities()  # the first call probes QEMU (about 8 s), later ones are cached
                conn.close()
                return
            except libvirt.libvirtError:
                pass
        time.sleep(0.2)
    raise LabError(f"libvirtd of {host.name} did not answer on {sock} within {timeout:.0f} s")


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child of ours counts as gone
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def stop_pid(pid: int, timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after timeout; returns once the process is gone (reaped if it is our child)."""
    with contextlib.suppress(ProcessLookupError):
        if pid_alive(pid):
            os.kill(pid, signal.SIGTERM)
    if not _gone_within(pid, timeout):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        if not _gone_within(pid, 10.0):
            raise LabError(f"process {pid} is still there 10 s after SIGKILL (stuck in the kernel?)")
    _reap(pid)


def _gone_within(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _reap(pid: int) -> None:
    """Collect the exit status of a child of ours that has ended, so that no zombie is left."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
