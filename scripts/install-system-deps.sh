#!/usr/bin/env bash
# Debian packages for the libvirt driver and `sova lab` (no systemd: the lab notes), plus the headers
# the libvirt Python binding builds against, and nats-server and PostgreSQL for the service mode (its
# tests start their own), Chromium with its WebDriver, in which the dashboard's tests run, and Prometheus
# for its promtool, which checks the metrics, the alerting rules and their unit tests. Run by `make` as
# root; elsewhere it says what it needs.
set -euo pipefail
PKGS=(libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86 qemu-utils busybox-static
      libvirt-dev pkg-config iproute2 nftables nats-server postgresql chromium chromium-driver openssl
      prometheus)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "note: the libvirt driver, sova lab and the service mode need these Debian packages (as root):" >&2
    echo "  apt-get install --no-install-recommends ${missing[*]}" >&2
    echo "the simulator works without them; the lab's and the bus's tests will say they cannot run" >&2
    exit 0
fi
echo "installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts a system-wide nats-server (port 4222), PostgreSQL cluster (5432) and Prometheus (9090);
# Sova's tests start their own or need only promtool, so a service this script just installed is
# stopped, and disabled where systemd runs (one that was there before is left alone)
for service in nats-server postgresql prometheus; do
    if [[ " ${missing[*]} " == *" $service "* ]]; then
        if [ -d /run/systemd/system ]; then
            systemctl disable --now "$service" >/dev/null 2>&1 || true
        else
            service "$service" stop >/dev/null 2>&1 || true
        fi
    fi
done
