"""The hypervisor's own CPU share (CloudScope's Dom0 weight) on real hosts, through libvirt.

- Xen: Dom0 is domain 0; its credit-scheduler ``weight`` is read and set with libvirt's scheduler
  parameters on it (as ``xl sched-credit -d 0 -w``).
- KVM has no Dom0: the I/O work Dom0's blkback and netback do on Xen runs in each guest's QEMU emulator
  thread, its iothreads and its vhost workers, which libvirt keeps in the guest's emulator and iothread
  cgroups. Their share is the CPU quota of those cgroups (``emulator_period``/``emulator_quota``,
  ``iothread_period``/``iothread_quota``). Sova maps a Dom0 weight w onto it as w / 256 cores for each
  guest's I/O threads (256, Xen's default weight, is one core); reading back, a host's weight is its
  guests' largest quota in those units, or unknown (NaN) where the quota is unlimited.
"""

from __future__ import annotations

import math

from sova.drivers.libvirt_common import CPU_PERIOD_US

XEN_DEFAULT_WEIGHT = 256  # one core of I/O threads per guest on KVM


def is_xen(conn) -> bool:
    try:
        return str(conn.getType()).lower().startswith("xen")
    except Exception:
        return False


def read_dom0_weight(conn, domains) -> float:
    """The host's Dom0 weight: Xen's domain 0 credit weight, or on KVM the guests' I/O-thread quota as a
    weight; NaN where the host does not say."""
    if is_xen(conn):
        try:
            return float(conn.lookupByID(0).schedulerParameters().get("weight", math.nan))
        except Exception:
            return math.nan
    shares = []
    for dom in domains:
        try:
            p = dom.schedulerParametersFlags(0)
        except Exception:
            continue
        quota, period = p.get("emulator_quota", -1), p.get("emulator_period", 0)
        if quota > 0 and period > 0:
            shares.append(quota / period * XEN_DEFAULT_WEIGHT)
    return max(shares) if shares else math.nan


def set_dom0_weight(conn, domains, weight: int, live_flag: int) -> str:
    """Give the host's I/O work `weight`; returns what was done, for the outcome's message."""
    if is_xen(conn):
        conn.lookupByID(0).setSchedulerParametersFlags({"weight": int(weight)}, live_flag)
        return f"Domain-0 credit weight set to {int(weight)}"
    quota = round(weight / XEN_DEFAULT_WEIGHT * CPU_PERIOD_US)
    params = {
        "emulator_period": CPU_PERIOD_US,
        "emulator_quota": quota,
        "iothread_period": CPU_PERIOD_US,
        "iothread_quota": quota,
    }
    names = []
    for dom in domains:
        dom.setSchedulerParametersFlags(params, live_flag)
        names.append(dom.name())
    return f"I/O threads of {len(names)} guest(s) may use {weight / XEN_DEFAULT_WEIGHT:g} core(s) each"
