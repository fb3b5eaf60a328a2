"""The lab's tiny guest: a Debian cloud kernel and a busybox initramfs with Sova's guest agent.

The cloud kernel builds its virtio drivers as modules, so the initramfs carries the few it needs and
/init loads them in order (the lab notes' list, plus virtio_console for the agent's channel). The
image is built once per lab directory and reused.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from sova.lab.errors import LabError

MODULES = (
    "virtio_ring",
    "virtio",
    "virtio_pci_modern_dev",
    "virtio_pci_legacy_dev",
    "virtio_pci",
    "virtio_blk",
    "failover",
    "net_failover",
    "virtio_net",
    "virtio_balloon",
    "virtio_console",
)
GUEST_FILES = ("init", "agent", "cycle", "sink")
BUSYBOX = Path("/bin/busybox")


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise LabError(f"{' '.join(cmd)} failed: {(r.stderr or r.stdout).strip()[-400:]}")
    return r.stdout


def cloud_kernel_package() -> str:
    """The versioned kernel package that linux-image-cloud-amd64 depends on (refreshing apt's lists
    once if they do not know it, as on a fresh image whose lists were cleaned)."""
    for attempt in range(2):
        r = subprocess.run(["apt-cache", "depends", "linux-image-cloud-amd64"], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            line = line.strip()
            if line.startswith("Depends:") and "linux-image-" in line:
                return line.split()[-1]
        if attempt == 0:
            _run(["apt-get", "update", "-q"])
    raise LabError("apt knows no linux-image-cloud-amd64 package even after apt-get update: check the Debian sources")


def _fetch_kernel(work: Path) -> tuple[Path, Path]:
    """Download and unpack the cloud kernel package; return (vmlinuz, modules directory)."""
    pkg = cloud_kernel_package()
    _run(["apt-get", "download", "-q", pkg], cwd=work)
    deb = next(work.glob(f"{pkg}_*.deb"), None)
    if deb is None:
        raise LabError(f"apt-get download {pkg} left no .deb in {work}")
    root = work / "root"
    _run(["dpkg-deb", "-x", str(deb), str(root)])
    vmlinuz = next((root / "boot").glob("vmlinuz-*"))
    return vmlinuz, next((root / "lib" / "modules").iterdir())


def _stage_initramfs(stage: Path, modules_dir: Path) -> None:
    for d in ("bin", "dev", "proc", "sys", "tmp", "lib/modules"):
        (stage / d).mkdir(parents=True, exist_ok=True)
    shutil.copy2(BUSYBOX, stage / "bin" / "busybox")
    for applet in _run([str(BUSYBOX), "--list"]).split():
        if applet != "busybox":
            (stage / "bin" / applet).symlink_to("busybox")
    by_name = {p.name.removesuffix(".ko"): p for p in modules_dir.rglob("*.ko")}
    missing = [m for m in MODULES if m not in by_name]
    if missing:
        raise LabError(f"the cloud kernel in {modules_dir} lacks modules {', '.join(missing)}")
    for m in MODULES:
        shutil.copy2(by_name[m], stage / "lib" / "modules" / f"{m}.ko")
    files = resources.files("sova.lab") / "guest"
    for name in GUEST_FILES:
        dst = stage / ("init" if name == "init" else f"bin/{name}")
        if dst.is_symlink():
            dst.unlink()
        dst.write_bytes((files / name).read_bytes())
        dst.chmod(0o755)


def _pack(stage: Path, out: Path) -> None:
    names = sorted(str(p.relative_to(stage)) for p in stage.rglob("*"))
    listing = ("\n".join(names) + "\n").encode()
    r = subprocess.run([str(BUSYBOX), "cpio", "-o", "-H", "newc"], cwd=stage, input=listing, capture_output=True)
    if r.returncode != 0:
        raise LabError(f"cpio failed: {r.stderr.decode(errors='replace')[-400:]}")
    out.write_bytes(gzip.compress(r.stdout, compresslevel=6))


def build(image_dir: Path) -> tuple[Path, Path]:
    """Build (or reuse) DIR/vmlinuz and DIR/initrd.gz; return their paths."""
    kernel, initrd = image_dir / "vmlinuz", image_dir / "initrd.gz"
    if kernel.exists() and initrd.exists():
        return kernel, initrd
    image_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=image_dir) as tmp:
        work = Path(tmp)
        vmlinuz, modules_dir = _fetch_kernel(work)
        stage = work / "stage"
        _stage_initramfs(stage, modules_dir)
        _pack(stage, work / "initrd.gz")
        shutil.copy2(vmlinuz, work / "vmlinuz")
        (work / "initrd.gz").replace(initrd)  # the kernel last: its presence marks a finished image
        (work / "vmlinuz").replace(kernel)
    return kernel, initrd
