"""The hypervisor's own CPU share (CloudScope's Dom0 weight) on real hosts, through libvirt.

- Xen: Dom0 is Domain-0; its credit-scheduler ``weight`` is read and set with libvirt's scheduler
  parameters on it (as ``xl sched-credit -d 0 -w``), in the units of the guests' own ``weight``.
- KVM has no Dom0: the I/O work Dom0's blkback and netback do on Xen runs in each guest's QEMU emulator
  thread, its iothreads and its vhost workers, in the guest's emulator and iothread cgroups, whose only
  control is a CPU cap (``emulator_period``/``emulator_quota``, ``iothread_period``/``iothread_quota``).
  A KVM host therefore reports no Dom0 weight (the model then uses Eq. 1), and setting one adjusts only
  the guests whose I/O threads are capped already: to weight / 256 cores each (256, Xen's default
  weight, is one core). Guests whose I/O threads are unlimited have all a weight could give them; a
  cap is never added where there was none.
"""

from __future__ import annotations

import math

from sova.drivers.libvirt_common import CPU_PERIOD_US, quota_is_unlimited

XEN_DEFAULT_WEIGHT = 256  # one core of I/O threads per guest on KVM
DOM0_NAME = "Domain-0"


def is_xen(conn) -> bool:
    try:
        return str(conn.getType()).lower().startswith("xen")
    except Exception:
        return False


def read_dom0_weight(conn) -> float:
    """Xen's Domain-0 credit weight; NaN on KVM (no Dom0) or when the host does not say."""
    if not is_xen(conn):
        return math.nan
    try:
        return float(conn.lookupByID(0).schedulerParameters().get("weight", math.nan))
    except Exception:
        return math.nan


def set_dom0_weight(conn, domains, weight: int, live_flag: int) -> tuple[bool, str]:
    """Give the host's I/O work `weight`: (whether everything asked was done, what was done)."""
    if is_xen(conn):
        conn.lookupByID(0).setSchedulerParametersFlags({"weight": int(weight)}, live_flag)
        return True, f"Domain-0 credit weight set to {int(weight)}"
    quota = round(weight / XEN_DEFAULT_WEIGHT * CPU_PERIOD_US)
    params = {
        "emulator_period": CPU_PERIOD_US,
        "emulator_quota": quota,
        "iothread_period": CPU_PERIOD_US,
        "iothread_quota": quota,
    }
    capped, unlimited, failed = [], 0, []
    for dom in domains:
        try:
            if quota_is_unlimited(dom.schedulerParametersFlags(0).get("emulator_quota", -1)):
                unlimited += 1  # all a weight could give it already
                continue
            dom.setSchedulerParametersFlags(params, live_flag)
            capped.append(dom.name())
        except Exception as exc:
            failed.append(f"{dom.name()}: {exc}")
    words = f"I/O threads of {len(capped)} capped guest(s) set to {weight / XEN_DEFAULT_WEIGHT:g} core(s) each"
    words += f"; {unlimited} guest(s) unlimited already" if unlimited else ""
    words += f"; failed on {'; '.join(failed)}" if failed else ""
    return not failed, words
