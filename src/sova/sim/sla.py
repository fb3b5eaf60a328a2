"""The SLA metrics of Beloglazov and Buyya (CCPE 24(13), 2012, §5.2), from a run's accounting.

- SLATAH, SLA violation time per active host: the mean over hosts that were ever active of the share of
  their active time in which they gave their VMs less CPU than the VMs asked for (the paper's "100 %
  utilisation": a host can give no more).
- PDM, performance degradation due to migrations: the mean over VMs of the CPU lost to migrations (10 %
  of what the VM asked for while it migrated, as the paper estimates it) over all the CPU it asked for.
- SLAV = SLATAH x PDM (both as fractions); ESV = energy (kWh) x SLAV.

The paper's means are over hosts and VMs. CloudSim's code divides sums instead (its Helper's
getSlaTimePerActiveHost and getSlaMetrics): all hosts' violation time over all their active time, all VMs'
migration loss over all the CPU they asked; ``slatah_pooled_pct`` and ``pdm_pooled_pct`` are those.
"""

from __future__ import annotations

import numpy as np


def sla_metrics(
    host_active_s: np.ndarray,
    host_short_s: np.ndarray,
    vm_cpu_asked: np.ndarray,
    vm_migration_loss: np.ndarray,
    energy_kwh: float,
) -> dict[str, float]:
    """slatah_pct, pdm_pct, slav and esv, and SLATAH and PDM pooled as CloudSim pools them; 0 where no host
    was active or no VM asked for CPU."""
    active = host_active_s > 0
    slatah = float(np.mean(host_short_s[active] / host_active_s[active])) if active.any() else 0.0
    asked = vm_cpu_asked > 0
    pdm = float(np.mean(vm_migration_loss[asked] / vm_cpu_asked[asked])) if asked.any() else 0.0
    slav = slatah * pdm
    pooled_slatah = float(host_short_s[active].sum() / host_active_s[active].sum()) if active.any() else 0.0
    pooled_pdm = float(vm_migration_loss[asked].sum() / vm_cpu_asked[asked].sum()) if asked.any() else 0.0
    return {
        "slatah_pct": 100 * slatah,
        "pdm_pct": 100 * pdm,
        "slav": slav,
        "esv": energy_kwh * slav,
        "slatah_pooled_pct": 100 * pooled_slatah,
        "pdm_pooled_pct": 100 * pooled_pdm,
    }
