"""What the lab needs on this machine, and installing it where we may.

Only Debian packages without systemd (the lab notes: `libvirt-daemon-system` pulls it in), the
`libvirt-qemu` user libvirtd insists on, and the libvirt Python binding.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from sova.lab.errors import LabError

PACKAGES = (
    "libvirt-daemon",
    "libvirt-daemon-driver-qemu",
    "libvirt-clients",
    "qemu-system-x86",
    "qemu-utils",
    "busybox-static",
    "nftables",  # the bridges' VM-to-VM flow counters
)
COMMANDS = {"libvirtd": "libvirt-daemon", "qemu-system-x86_64": "qemu-system-x86", "qemu-img": "qemu-utils"}


def missing_packages() -> list[str]:
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Status}\n", *PACKAGES], capture_output=True, text=True)
    installed = {ln.split()[0] for ln in r.stdout.splitlines() if ln.endswith("install ok installed")}
    return [p for p in PACKAGES if p not in installed]


def ensure(install: bool = True, say=print) -> None:
    """Install what is missing (as root) or stop with what is needed and how to get it."""
    if os.geteuid() != 0:
        raise LabError("the lab needs root: it creates network namespaces, cgroups and bind mounts (run as root)")
    if shutil.which("dpkg-query") is None or shutil.which("apt-get") is None:
        raise LabError("the lab needs a Debian-like system with dpkg and apt-get")
    missing = missing_packages()
    if missing:
        if not install:
            raise LabError(
                f"missing Debian packages: {' '.join(missing)} (apt-get install --no-install-recommends ...)"
            )
        say(f"installing {' '.join(missing)} (no systemd, no recommends)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env)
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise LabError(f"apt-get install {' '.join(missing)} failed: {r.stderr.strip()[-400:]}")
    for cmd, pkg in COMMANDS.items():
        if shutil.which(cmd) is None:
            raise LabError(f"{cmd} not found although {pkg} is installed")
    if subprocess.run(["getent", "passwd", "libvirt-qemu"], capture_output=True).returncode != 0:
        subprocess.run(["groupadd", "-r", "libvirt-qemu"], capture_output=True)
        r = subprocess.run(
            [
                "useradd",
                "-r",
                "-g",
                "libvirt-qemu",
                "-d",
                "/var/lib/libvirt",
                "-s",
                "/usr/sbin/nologin",
                "libvirt-qemu",
            ],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            raise LabError(f"could not create the libvirt-qemu user libvirtd needs: {r.stderr.strip()}")
    try:
        import libvirt  # noqa: F401
    except ImportError as e:
        raise LabError(
            "the libvirt Python binding is missing: `make` installs it (needs libvirt-dev and pkg-config, then "
            "pip install libvirt-python==9.0.0)"
        ) from e
