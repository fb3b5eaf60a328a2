"""Values a scenario may hold but almost certainly did not mean: warnings, given before a run starts.

Validation (``scenario_reader``) refuses what cannot be run. This module looks at a valid scenario for
what can be run but is most likely a slip of a unit or a digit: a host with 10^12 cores, "1e30GiB" of
memory, a 100,000-day run, a VM with more vCPUs than its host has cores, a link of 0 b/s, a coarse
step under workloads that need fine ones. Each warning is
a ``Problem`` (where, what), so it prints like an error, and the run still goes ahead.
"""

from __future__ import annotations

from sova.model.name_match import NameMatcher
from sova.model.scenario import Scenario
from sova.model.schema import Problem

# Beyond these, a value is far past any machine of today (2026): the largest servers have ~1,000
# hardware threads and ~32 TiB of memory; the fastest Ethernet ports run at 1.6 Tb/s.
MAX_CORES = 4096
MAX_MEMORY_MIB = 64 * 1024**2  # 64 TiB
MAX_LINK_BPS = 3.2e12
MAX_DURATION_S = 366 * 86400.0  # a year
FINE_STEP_S = 60.0  # above this, only trace replay and CPU burners are modelled faithfully
COARSE_STEP_KINDS = frozenset({"planetlab", "bitbrains", "azure", "opendc", "lookbusy"})


def warnings(scenario: Scenario) -> list[Problem]:
    """Every implausible value of the scenario, one line each (entries that repeat are summed up)."""
    where = scenario.source
    found: list[Problem] = []
    if scenario.duration > MAX_DURATION_S:
        found.append(
            Problem(
                f"{where}: [scenario].duration",
                f"{scenario.duration / 86400:,.0f} days of simulated time; is the unit right (s, min, h, d)?",
            )
        )
    found += _topology(scenario)
    fine = sorted({w.kind for w in scenario.workloads} - COARSE_STEP_KINDS)
    if scenario.step > FINE_STEP_S and fine:
        found.append(
            Problem(
                f"{where}: [scenario].step",
                f"{scenario.step:g} s steps with {', '.join(fine)} workloads: request queues, streams, jobs and "
                f"migrations advance a step at a time; steps above {FINE_STEP_S:g} s suit trace studies "
                f"({', '.join(sorted(COARSE_STEP_KINDS))})",
            )
        )
    found += _repeated(
        f"{where}: [[hosts]]",
        [(h.name, f"{h.cores:,} cores") for h in scenario.hosts if h.cores > MAX_CORES],
        f"more than {MAX_CORES:,} hardware threads in one host",
    )
    found += _repeated(
        f"{where}: [[hosts]]",
        [(h.name, f"{h.memory / 1024**2:,.3g} TiB of memory") for h in scenario.hosts if h.memory > MAX_MEMORY_MIB],
        "more memory than any machine has (is the unit right? a bare number is MiB)",
    )
    found += _repeated(
        f"{where}: [[hosts]]",
        [
            (h.name, f"a {h.nic.bandwidth / 1e9:,.3g} Gb/s NIC")
            for h in scenario.hosts
            if h.nic.bandwidth > MAX_LINK_BPS
        ],
        "faster than any NIC (is the unit right? a bare number is bit/s)",
    )
    cores = {h.name: h.cores for h in scenario.hosts}
    found += _repeated(
        f"{where}: [[vms]]",
        [
            (v.name, f"{v.vcpus} vCPUs on {v.host} ({cores[v.host]} cores)")
            for v in scenario.vms
            if v.host and v.vcpus > cores[v.host]
        ],
        "more vCPUs than its host has cores: the VM can never run all of them at once",
    )
    memory = {v.name: v.memory for v in scenario.vms}
    matching = NameMatcher(memory)
    found += _repeated(
        f"{where}: [[workloads]]",
        [
            (vm, f"{w.memory_used:,.0f} MiB in use on a {memory[vm]:,.0f} MiB VM")
            for w in scenario.workloads
            if w.memory_used > 0
            for vm in matching(w.vm)
            if w.memory_used > memory[vm]
        ],
        "more than the VM has; it counts as all of the VM's memory",
    )
    return found


def _topology(scenario: Scenario) -> list[Problem]:
    topo, where = scenario.topology, f"{scenario.source}: [topology]"
    found = []
    for key in ("link_speed", "external_speed"):
        speed = getattr(topo, key)
        if speed == 0:
            found.append(Problem(f"{where}.{key}", "0 b/s: nothing can cross these links; every flow over them stalls"))
        elif speed > MAX_LINK_BPS:
            found.append(
                Problem(f"{where}.{key}", f"{speed / 1e9:,.3g} Gb/s is faster than any link (a bare number is bit/s)")
            )
    return found


def _repeated(where: str, items: list[tuple[str, str]], why: str) -> list[Problem]:
    """One warning for items that share a reason: the first one shown, and how many more."""
    if not items:
        return []
    name, value = items[0]
    more = f" (and {len(items) - 1} more)" if len(items) > 1 else ""
    return [Problem(f"{where} ({name})", f"{value}{more}: {why}")]
