"""Values a scenario may hold but almost certainly did not mean: warnings, given before a run starts.

Validation (``scenario_reader``) refuses what cannot be run. This module looks at a valid scenario for
what can be run but is most likely a slip of a unit or a digit: a host with 10^12 cores, "1e30GiB" of
memory, a 100,000-day run, a VM with more vCPUs than its host has cores, a link of 0 b/s, a coarse
step under workloads that need fine ones. Each warning is
a ``Problem`` (where, what), so it prints like an error, and the run still goes ahead.
"""

from __future__ import annotations

import numpy as np

from sova.model.name_match import NameMatcher
from sova.model.scenario import Scenario
from sova.model.schema import MAX_DURATION_S, MAX_LINK_BPS, MAX_MEMORY_MIB, Problem
from sova.model.topology import fabric_size, host_ports

# Beyond this, a value is far past any machine of today (2026): the largest servers have ~1,000 hardware
# threads (MAX_MEMORY_MIB, MAX_LINK_BPS and MAX_DURATION_S: sova.model.schema)
MAX_CORES = 4096
FINE_STEP_S = 60.0  # above this, only trace replay and CPU burners are modelled faithfully
LARGE_FABRIC_LINKS = 100_000  # a fat-tree of k = 48 has 111,750 links; building one takes about 0.5 s
COARSE_STEP_KINDS = frozenset({"planetlab", "bitbrains", "azure", "opendc", "lookbusy"})


def warnings(scenario: Scenario) -> list[Problem]:
    """Every implausible value of the scenario, one line each (entries that repeat are summed up)."""
    where = scenario.source
    found: list[Problem] = list(scenario.warnings)  # those found as the file was read
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
    found += _repeated(
        f"{where}: [[hosts]]",
        [(h.name, f"dom0_vcpus = {h.dom0_vcpus} on {h.cores} cores") for h in scenario.hosts if h.dom0_vcpus > h.cores],
        "more Dom0 vCPUs than the host has cores: Dom0 can never run all of them at once",
    )
    found += _repeated(
        f"{where}: [[vms]]",
        [(v.name, f"wss {v.wss:,.0f} MiB of {v.memory:,.0f} MiB") for v in scenario.vms if v.wss > v.memory],
        "a writable working set larger than the VM's memory; a pre-copy round sends at most all of it",
    )
    found += _after_the_end(scenario)
    found += _broken_rules(scenario)
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


def _after_the_end(scenario: Scenario) -> list[Problem]:
    """Times the run never reaches: arrivals, phases, and windows longer than the run itself."""
    end, where = scenario.duration, scenario.source
    found = _repeated(
        f"{where}: [[vms]]",
        [(v.name, f"arrive = {v.arrive:g} s") for v in scenario.vms if v.arrive >= end],
        f"at or after the end of the {end:g} s run: the VM never comes",
    )
    found += [
        Problem(
            f"{w.where}.phases #{k}.at", f"{phase.at:g} s is at or after the end of the {end:g} s run: it never starts"
        )
        for w in scenario.workloads
        for k, phase in enumerate(w.phases, start=1)
        if phase.at >= end
    ]
    windows = {
        "[control].monitor_period": (scenario.control.monitor_period, "the sensors are read once, at the start"),
        "[outputs].interference": (scenario.outputs.interference, "it measures the whole run"),
        "[outputs].sample_every": (scenario.outputs.sample_every, "the metrics have one row"),
    }
    found += [
        Problem(f"{where}: {key}", f"{value:g} s is longer than the {end:g} s run: {consequence}")
        for key, (value, consequence) in windows.items()
        if value > end
    ]
    return found


def _broken_rules(scenario: Scenario) -> list[Problem]:
    """Must rules that the VMs' starting hosts break: the rules' keeper moves them as the run starts."""
    if not scenario.rules:
        return []
    hosts = tuple(h.name for h in scenario.hosts)
    position = {name: k for k, name in enumerate(hosts)}
    vm_host = np.array([position.get(v.host, -1) for v in scenario.vms], dtype=np.int64)
    bound = scenario.rules.bind(tuple(v.name for v in scenario.vms), hosts)
    return [
        Problem(
            f"{scenario.source}: [[rules]] ({violation.rule.name})",
            f"the starting placement breaks it: {violation.describe()}; keep-rules migrates them once the run starts",
        )
        for violation in bound.violations(vm_host, must_only=True)
    ]


def _topology(scenario: Scenario) -> list[Problem]:
    topo, where = scenario.topology, f"{scenario.source}: [topology]"
    found = []
    _, links = fabric_size(topo, len(scenario.hosts), len(scenario.storage))
    ports = host_ports(topo, len(scenario.hosts))
    if links > LARGE_FABRIC_LINKS and ports > 4 * len(scenario.hosts):
        found.append(
            Problem(
                where,
                f"a {topo.kind} of {ports:,} host ports and {links:,} links for {len(scenario.hosts):,} hosts: "
                "most of it is empty, and it costs time and memory to build and route; is that meant?",
            )
        )
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
