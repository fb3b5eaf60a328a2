#!/usr/bin/env bash
# Debian packages for the libvirt driver and `sova lab` (no systemd: the lab notes), plus the headers
# the libvirt Python binding builds against. Run by `make` as root; elsewhere it says what it needs.
set -euo pipefail
PKGS=(libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86 qemu-utils busybox-static
      libvirt-dev pkg-config iproute2)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "note: the libvirt driver and sova lab need these Debian packages (as root):" >&2
    echo "  apt-get install --no-install-recommends ${missing[*]}" >&2
    echo "the simulator works without them; the lab's tests will say they cannot run" >&2
    exit 0
fi
echo "installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
